"""Use cases for API keys and the audit log (the HTTP API's access control data).

Authentication itself (JWT, headers) is HTTP and lives in ``rota.api.auth``; what is
decided here — who may mint which key, how a key is checked — is the same for any door.
"""

from __future__ import annotations

from collections.abc import Iterable

from rota.clock import Clock
from rota.domain.access import (
    ALL_NAMESPACES,
    ApiKey,
    AuditEntry,
    AuditQuery,
    NewApiKey,
    NewAuditEntry,
    Principal,
    issue_api_key,
    namespaces_within,
    parse_namespaces,
    parse_scopes,
    secret_matches,
    split_api_key,
)
from rota.domain.runs import check_name
from rota.errors import ApiKeyNotFound, InvalidArgument
from rota.store.port import Store


async def create_api_key(
    store: Store,
    clock: Clock,
    creator: Principal,
    name: str,
    scopes: Iterable[str],
    namespaces: Iterable[str],
) -> tuple[ApiKey, str]:
    """A new key and its plaintext (shown once). Nobody can mint a key that reaches
    more than they do themselves."""
    check_name("name", name)
    granted = parse_scopes(scopes)
    if not granted:
        raise InvalidArgument("scopes", [], "at least one scope")
    if not granted <= creator.scopes:
        extra = sorted(s.value for s in granted - creator.scopes)
        raise InvalidArgument("scopes", extra, "scopes you hold yourself")
    reach = parse_namespaces(namespaces)
    if not namespaces_within(reach, creator.namespaces):
        raise InvalidArgument("namespaces", sorted(reach or {"*"}), "namespaces you can reach")
    issued = issue_api_key()
    key = await store.create_api_key(
        NewApiKey(
            key_id=issued.key_id,
            secret_hash=issued.secret_hash,
            name=name,
            scopes=tuple(sorted(s.value for s in granted)),
            namespaces=(ALL_NAMESPACES,) if reach is None else tuple(sorted(reach)),
            created_by=creator.who,
        ),
        clock.db_now(),
    )
    return key, issued.plaintext


def key_principal(key: ApiKey) -> Principal:
    return Principal(
        subject=key.key_id,
        kind="api_key",
        scopes=parse_scopes(key.scopes),
        namespaces=parse_namespaces(key.namespaces),
    )


async def authenticate_api_key(store: Store, text: str) -> Principal | None:
    """The key's principal, or None if the text is no live key of ours."""
    parts = split_api_key(text)
    if parts is None:
        return None
    key_id, secret = parts
    key = await store.get_api_key(key_id)
    if key is None or not key.active or not secret_matches(secret, key.secret_hash):
        return None
    return key_principal(key)


def _visible(key: ApiKey, viewer: Principal) -> bool:
    return namespaces_within(parse_namespaces(key.namespaces), viewer.namespaces)


async def list_api_keys(store: Store, viewer: Principal) -> list[ApiKey]:
    return [key for key in await store.list_api_keys() if _visible(key, viewer)]


async def revoke_api_key(store: Store, clock: Clock, viewer: Principal, key_id: str) -> ApiKey:
    key = await store.get_api_key(key_id)
    if key is None or not _visible(key, viewer):
        raise ApiKeyNotFound(key_id)
    revoked = await store.revoke_api_key(key_id, clock.db_now())
    if revoked is None:
        raise ApiKeyNotFound(key_id)
    return revoked


async def record(store: Store, clock: Clock, entry: NewAuditEntry) -> int:
    return await store.append_audit(entry, clock.db_now())


COMMAND_STATUS = 0  # an audit entry's status when it records a command, not an HTTP call


async def record_command(
    store: Store,
    clock: Clock,
    actor: str,
    action: str,
    target: str,
    *,
    namespace: str | None = None,
    outcome: str = "ok",
    detail: str | None = None,
) -> int:
    """Audit a command that changed the database without the API (``rota limits set``,
    ``rota db upgrade``...): ``actor`` is who ran it (``os:<user>@<host>``). Like the
    API's entries, it names what was changed, never a secret or a payload value."""
    entry = NewAuditEntry(
        actor=actor,
        action=action,
        target=target,
        namespace=namespace,
        status=COMMAND_STATUS,
        outcome=outcome,
        correlation_id=None,
        detail=detail,
    )
    return await record(store, clock, entry)


async def audit_log(
    store: Store, viewer: Principal, before_id: int | None = None, limit: int = 50
) -> list[AuditEntry]:
    """Entries about the viewer's namespaces (cluster-wide ones only for a viewer who
    reaches every namespace)."""
    if not 1 <= limit <= 500:
        raise InvalidArgument("limit", limit, "an integer 1-500")
    namespaces = None if viewer.namespaces is None else tuple(sorted(viewer.namespaces))
    return await store.list_audit(AuditQuery(namespaces, before_id, limit))
