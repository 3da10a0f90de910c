"""Who may do what: scopes, roles, namespaces, API keys and the audit log.

Pure values and rules; the HTTP layer authenticates callers and the store keeps keys
and audit entries. See docs/adr/0007-http-api-and-auth.md for the reasoning.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from rota.domain.runs import check_name
from rota.domain.values import one_of
from rota.errors import InvalidArgument

ALL_NAMESPACES = "*"


class Scope(StrEnum):
    READ = "jobs:read"  # read jobs, runs, logs, the DLQ, workers, leader, handlers
    TRIGGER = "jobs:trigger"  # make runs happen or stop: trigger, cancel, requeue, replay
    MANAGE = "jobs:manage"  # define jobs: create, update, delete, pause, resume
    ADMIN = "jobs:admin"  # the cluster and access: drain workers, API keys, audit log
    METRICS = "metrics:read"  # scrape /metrics (filtered to the caller's namespaces)
    EVENTS = "events:write"  # publish events (which runs the jobs subscribed to them)


class Role(StrEnum):
    VIEWER = "viewer"
    OPERATOR = "operator"
    ADMIN = "admin"


# Scopes are not hierarchical: a route asks for exactly one, and a caller holds a set.
# Roles are names for the usual sets.
ROLE_SCOPES: dict[Role, frozenset[Scope]] = {
    Role.VIEWER: frozenset({Scope.READ}),
    Role.OPERATOR: frozenset({Scope.READ, Scope.TRIGGER, Scope.MANAGE, Scope.EVENTS}),
    Role.ADMIN: frozenset(Scope),
}


def parse_scopes(values: Iterable[str]) -> frozenset[Scope]:
    """Scope names -> scopes; an unknown name is refused (a typo must not grant less
    silently, nor be mistaken for a grant)."""
    return frozenset(one_of("scope", Scope, value) for value in values)


def role_scopes(roles: Iterable[str]) -> frozenset[Scope]:
    scopes: set[Scope] = set()
    for value in roles:
        scopes |= ROLE_SCOPES[one_of("role", Role, value)]
    return frozenset(scopes)


def parse_namespaces(values: Iterable[str]) -> frozenset[str] | None:
    """Namespace names -> a set, or None for every namespace (``*``)."""
    names = list(values)
    if ALL_NAMESPACES in names:
        if len(names) != 1:
            raise InvalidArgument("namespaces", names, "'*' alone, or a list of namespaces")
        return None
    if not names:
        raise InvalidArgument("namespaces", names, "at least one namespace, or '*'")
    return frozenset(check_name("namespace", name) for name in names)


def namespaces_within(inner: frozenset[str] | None, outer: frozenset[str] | None) -> bool:
    """True if ``inner`` grants no namespace that ``outer`` does not (None = all)."""
    if outer is None:
        return True
    return inner is not None and inner <= outer


@dataclass(frozen=True)
class Principal:
    """An authenticated caller. ``namespaces`` None means every namespace."""

    subject: str
    kind: str  # "jwt" or "api_key"
    scopes: frozenset[Scope]
    namespaces: frozenset[str] | None

    @property
    def who(self) -> str:
        return f"{self.kind}:{self.subject}"

    def can_see(self, namespace: str) -> bool:
        return self.namespaces is None or namespace in self.namespaces

    def reach(self, asked: str | None) -> tuple[str, ...] | None:
        """The namespaces a search may cover: the one asked for if this caller sees it
        (else none, indistinguishable from an empty one), or every one it sees (None:
        all of them)."""
        if asked is not None:
            return (asked,) if self.can_see(asked) else ()
        return None if self.namespaces is None else tuple(sorted(self.namespaces))


# -- API keys -------------------------------------------------------------------------
# Format: rota_<key id: 16 hex>_<secret: 43 url-safe chars, 256 bits>. The id finds the
# row; only sha256(secret) is stored. A fast hash is right for a random 256-bit secret
# (nothing to brute-force, unlike a password); comparison is constant-time.
API_KEY_PREFIX = "rota_"
_API_KEY = re.compile(r"^rota_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$")


@dataclass(frozen=True)
class IssuedApiKey:
    key_id: str
    secret_hash: str
    plaintext: str = field(repr=False)  # shown once, never stored, never in a repr


def issue_api_key() -> IssuedApiKey:
    key_id = secrets.token_hex(8)
    secret = secrets.token_urlsafe(32)
    return IssuedApiKey(key_id, hash_secret(secret), f"{API_KEY_PREFIX}{key_id}_{secret}")


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def split_api_key(text: str) -> tuple[str, str] | None:
    """``rota_<id>_<secret>`` -> (id, secret); None if it is not shaped like a key."""
    match = _API_KEY.match(text)
    return (match[1], match[2]) if match else None


def secret_matches(secret: str, secret_hash: str) -> bool:
    return hmac.compare_digest(hash_secret(secret), secret_hash)


@dataclass(frozen=True)
class NewApiKey:
    key_id: str
    secret_hash: str
    name: str
    scopes: tuple[str, ...]
    namespaces: tuple[str, ...]  # ("*",) for every namespace
    created_by: str


@dataclass(frozen=True)
class ApiKey:
    key_id: str
    secret_hash: str
    name: str
    scopes: tuple[str, ...]
    namespaces: tuple[str, ...]
    created_by: str
    created_at: datetime
    revoked_at: datetime | None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


# -- audit ----------------------------------------------------------------------------
@dataclass(frozen=True)
class NewAuditEntry:
    actor: str  # "jwt:<sub>" or "api_key:<id>"
    action: str  # e.g. "jobs.create"
    target: str  # e.g. "job default/nightly", "run 42"
    namespace: str | None
    status: int  # the HTTP status answered
    outcome: str  # "ok", "denied", "rejected", "failed"
    correlation_id: str | None
    detail: str | None = None


@dataclass(frozen=True)
class AuditEntry:
    id: int
    at: datetime
    actor: str
    action: str
    target: str
    namespace: str | None
    status: int
    outcome: str
    correlation_id: str | None
    detail: str | None


@dataclass(frozen=True)
class AuditQuery:
    namespaces: tuple[str, ...] | None = None  # None: every entry
    before_id: int | None = None  # keyset: entries with id < before_id, newest first
    limit: int = 50
