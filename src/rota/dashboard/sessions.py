"""Dashboard sessions: a signed, expiring cookie naming the principal, and the CSRF
token that every mutating form carries.

The cookie holds no credential: sign-in checks the token or API key once (exactly as
the API does) and the cookie then carries the principal it proved, signed with a key
derived from the server's token signing key. So a cookie signed by another server (or
after the key changed), altered, or past its expiry is refused, and the user signs in
again. A session made with an API key also ends when that key is revoked (checked on
every request). Sign-out writes the session id to the store until the cookie would
have expired, and every server process refuses it from then on (one primary-key read
per request).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass
from datetime import datetime

from rota.domain.access import Principal, Scope

COOKIE = "rota_session"
SESSION_SECONDS = 8 * 3600  # a working day; a JWT's own expiry ends it sooner
_PURPOSE = b"rota-dashboard-session-v1"


@dataclass(frozen=True)
class Session:
    session_id: str
    principal: Principal
    expires_at: float  # Unix seconds
    api_key_id: str | None  # set when signed in with an API key: revoking it ends this

    def csrf_token(self, key: bytes) -> str:
        """The token forms carry: bound to this session, so one taken from another
        session (or made up) is refused."""
        digest = hmac.new(key, b"csrf:" + self.session_id.encode(), hashlib.sha256)
        return _b64(digest.digest())

    def csrf_matches(self, key: bytes, given: str | None) -> bool:
        return given is not None and tokens_match(given, self.csrf_token(key))


def tokens_match(given: str, expected: str) -> bool:
    """Whether a token a request carries is ``expected``, in constant time. As bytes:
    ``hmac.compare_digest`` raises TypeError for a str with any non-ASCII character,
    and what a request carries is anything (a '²' in a form answered 500)."""
    return hmac.compare_digest(
        given.encode("utf-8", "surrogatepass"), expected.encode("utf-8", "surrogatepass")
    )


def session_key(signing_key: str) -> bytes:
    """The cookie key, derived from the token signing key: a different purpose, so a
    cookie is never a token and a token is never a cookie."""
    return hmac.new(signing_key.encode(), _PURPOSE, hashlib.sha256).digest()


def new_session(
    principal: Principal, now: datetime, credential_expires_at: float | None, api_key_id: str | None
) -> Session:
    expires = now.timestamp() + SESSION_SECONDS
    if credential_expires_at is not None:
        expires = min(expires, credential_expires_at)
    return Session(secrets.token_urlsafe(18), principal, expires, api_key_id)


def encode(session: Session, key: bytes) -> str:
    principal = session.principal
    body = {
        "sid": session.session_id,
        "sub": principal.subject,
        "kind": principal.kind,
        "scopes": sorted(s.value for s in principal.scopes),
        "ns": None if principal.namespaces is None else sorted(principal.namespaces),
        "exp": session.expires_at,
        "key": session.api_key_id,
    }
    payload = _b64(json.dumps(body, separators=(",", ":")).encode())
    return f"{payload}.{_sign(key, payload)}"


def decode(cookie: str | None, key: bytes, now: datetime) -> Session | None:
    """The session the cookie proves, or None (missing, altered, signed with another
    key, expired or malformed: all the same to the caller, who must sign in)."""
    if not cookie or len(cookie) > 4096 or cookie.count(".") != 1:
        return None
    payload, signature = cookie.split(".")
    if not tokens_match(signature, _sign(key, payload)):
        return None
    try:
        body = json.loads(_unb64(payload))
        namespaces = body["ns"]
        session = Session(
            session_id=str(body["sid"]),
            principal=Principal(
                subject=str(body["sub"]),
                kind=str(body["kind"]),
                scopes=frozenset(Scope(s) for s in body["scopes"]),
                namespaces=None if namespaces is None else frozenset(map(str, namespaces)),
            ),
            expires_at=float(body["exp"]),
            api_key_id=None if body["key"] is None else str(body["key"]),
        )
    except (ValueError, KeyError, TypeError):
        return None  # signed by us but not ours to read (an older format): sign in again
    if session.expires_at <= now.timestamp():
        return None
    return session


def _sign(key: bytes, payload: str) -> str:
    return _b64(hmac.new(key, payload.encode(), hashlib.sha256).digest())


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
