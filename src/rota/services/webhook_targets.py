"""Where a webhook may be sent: the SSRF rules (docs/security.md, "Webhooks").

A URL must be http(s), name a host, carry no credentials, and resolve only to public
addresses: every address the host resolves to is checked (a host with one public and
one private address is refused), unless the operator allows private receivers
(``webhook_allow_private_addresses``). A delivery resolves again and connects to the
address it checked (the Host header and TLS SNI keep the name), so a DNS answer that
changes between the check and the connection cannot steer it inside.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from rota.domain.webhooks import MAX_URL_LENGTH
from rota.errors import InvalidArgument

URL_RULE = "an http:// or https:// URL of a host, without user:password"
PUBLIC_RULE = (
    "a URL whose host resolves only to public addresses (loopback, link-local and "
    "private ones are refused unless webhook_allow_private_addresses is on)"
)
IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class PinnedTarget:
    """A checked URL, rewritten to the address that was checked."""

    url: str  # with the host replaced by the checked address
    host_header: str
    server_name: str  # for TLS SNI and certificate checks


def check_url(url: object) -> str:
    """The URL's syntax (nothing resolved): what a subscription may name at all."""
    if not isinstance(url, str) or len(url) > MAX_URL_LENGTH:
        raise InvalidArgument("url", url, URL_RULE)
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - reading it checks the port is a number in range
    except ValueError:
        raise InvalidArgument("url", url, URL_RULE) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidArgument("url", url, URL_RULE)
    if parts.username is not None or parts.password is not None:
        # Credentials in a URL would be shown wherever subscriptions are listed.
        raise InvalidArgument("url", "(a URL with credentials)", URL_RULE)
    return url


def is_refused(address: IpAddress) -> bool:
    """Loopback, link-local, private, reserved, multicast: anything not public."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return not address.is_global or address.is_multicast


async def resolve(host: str, port: int) -> list[IpAddress]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [ipaddress.ip_address(info[4][0]) for info in infos]


async def pin(url: str, allow_private: bool) -> PinnedTarget:
    """Resolve the URL's host and check every address; the target pinned to the first.
    Raises InvalidArgument naming the URL when it is refused or does not resolve."""
    parts = urlsplit(check_url(url))
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        addresses = await resolve(host, port)
    except (OSError, UnicodeError, ValueError):  # ValueError: a NUL in the host
        raise InvalidArgument("url", url, "a URL whose host resolves") from None
    if not addresses:
        raise InvalidArgument("url", url, "a URL whose host resolves")
    if not allow_private and any(is_refused(address) for address in addresses):
        raise InvalidArgument("url", url, PUBLIC_RULE)
    chosen = addresses[0]
    shown = f"[{chosen}]" if isinstance(chosen, ipaddress.IPv6Address) else str(chosen)
    netloc = f"{shown}:{port}"
    host_header = host if parts.port is None else f"{host}:{parts.port}"
    pinned = urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))
    return PinnedTarget(pinned, host_header, host)
