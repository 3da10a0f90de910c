"""Keeping secrets out of text: a value type whose repr and str never show the secret,
and the one way rota prints a database URL.

Whatever holds a signing key, an API key secret or a database password holds it as a
:class:`Secret`, so a settings object that ends up in a log line, an exception message
or a debugger shows ``Secret('**********')`` instead of the value. Only
:meth:`Secret.reveal` hands the value out, at the one place that needs it (signing a
token, connecting to the database).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

HIDDEN = "**********"


class Secret:
    """A string that does not say what it is. Equal to another Secret of the same value
    (settings compare), never to a plain string (a mix-up should not pass silently)."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        if not isinstance(value, str):
            raise TypeError("a Secret holds a str")
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return f"Secret('{HIDDEN}')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickling would copy the value somewhere we do not control (a process pool's
        # pipe, a cache): refuse rather than leak.
        raise TypeError("a Secret cannot be pickled")


def redact_url(url: str) -> str:
    """``url`` with any password replaced by ``**********``; everything else kept, so
    an operator still sees which database and which user. A URL that cannot be parsed
    is hidden entirely (it may hold a password in a form we do not recognise)."""
    try:
        parts = urlsplit(url)
        password = parts.password
        host = parts.hostname
        port = parts.port
    except ValueError:
        return HIDDEN
    query = _redact_query(parts.query)
    if password is None:
        if query == parts.query:
            return url  # (urlunsplit would turn sqlite:///x into sqlite:/x)
        return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))
    user = parts.username or ""
    netloc = f"{user}:{HIDDEN}@{host or ''}"
    if ":" in (host or ""):  # an IPv6 literal keeps its brackets
        netloc = f"{user}:{HIDDEN}@[{host}]"
    if port is not None:
        netloc += f":{port}"
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _redact_query(query: str) -> str:
    """libpq also takes ``?password=...`` (and ``sslpassword``) in the query string."""
    if "password" not in query.lower():
        return query
    pairs = parse_qsl(query, keep_blank_values=True)
    return urlencode([(k, HIDDEN if "password" in k.lower() else v) for k, v in pairs], safe="*")
