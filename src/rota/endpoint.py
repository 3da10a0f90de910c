"""Where ``rota server`` listens by default and where the client and CLI look for it:
one home, so the two defaults cannot drift apart."""

from __future__ import annotations

DEFAULT_HOST = "127.0.0.1"  # loopback: a node is reachable from elsewhere only on purpose
DEFAULT_PORT = 5017
DEFAULT_URL = f"http://{DEFAULT_HOST}:{DEFAULT_PORT}"
