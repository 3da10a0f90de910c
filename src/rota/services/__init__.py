"""Use cases, one module per concept: what the library, the HTTP API, the dashboard and
the CLI share. They take a store port and a clock; they know nothing of HTTP or click."""
