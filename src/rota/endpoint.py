"""Where ``rota server`` listens by default and where the client and CLI look for it:
one home, so the two defaults cannot drift apart. Also what counts as a loopback
address, for the server's development mode and a worker's --http alike."""

from __future__ import annotations

import ipaddress

DEFAULT_HOST = "127.0.0.1"  # loopback: a node is reachable from elsewhere only on purpose
DEFAULT_PORT = 5017
DEFAULT_URL = f"http://{DEFAULT_HOST}:{DEFAULT_PORT}"
LOOPBACK_NAMES = ("localhost",)


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name we cannot judge, or 0.0.0.0/:: (every interface)
