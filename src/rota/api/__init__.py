"""The HTTP API: routes that translate between JSON and one use-case call
(rota.services), with authentication, audit and problem responses. rota.asgi puts it
and the dashboard into one application."""
