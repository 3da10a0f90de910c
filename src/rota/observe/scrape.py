"""Who may scrape /metrics (docs/adr/0013-observability.md).

- ``rota server``: a bearer credential holding ``metrics:read`` (a token or an API key),
  or the scrape token ``ROTA_METRICS_TOKEN``. A caller who reaches every namespace, and
  the scrape token, see every series; a caller limited to some namespaces sees only
  the cluster gauges of those namespaces (the process's own series name the queues
  and handlers of every namespace it serves).
- ``rota worker --http``: the scrape token; without one, it serves loopback only.
  Its health probes need nothing (they say ready or not, and why, nothing more).
"""

from __future__ import annotations

import hmac

from rota.errors import InvalidArgument
from rota.redact import Secret

MIN_TOKEN_BYTES = 32


def check_scrape_token(value: str) -> Secret:
    """The token, hidden; refused if short (anyone who guesses it reads every queue's
    name). The error never repeats the value."""
    size = len(value.encode())
    if size < MIN_TOKEN_BYTES:
        raise InvalidArgument(
            "ROTA_METRICS_TOKEN",
            f"<{size} bytes>",
            f"a random string of at least {MIN_TOKEN_BYTES} bytes "
            "(python -c 'import secrets; print(secrets.token_urlsafe(32))')",
        )
    return Secret(value)


def bearer_matches(authorization: str | None, token: Secret | None) -> bool:
    """Whether an Authorization header carries the scrape token (constant-time)."""
    if token is None or not authorization:
        return False
    scheme, _, credential = authorization.partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(credential.strip().encode(), token.reveal().encode())
