"""What the API reads and writes, as pydantic models (and so as OpenAPI schemas), one
module per concept: jobs, runs, bulk (actions on a filter), cluster, access, events,
webhooks, workflows; the field types they share in ``fields``.

Requests forbid unknown fields (a typo is a 422, not a silently ignored option); enums
travel as their string values; instants are ISO 8601 with a UTC offset.
"""
