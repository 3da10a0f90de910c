"""Rows of the API's tables (schema v4) as domain values, shared by both adapters.

As in :mod:`rota.store.rows`, adapters hand over dicts whose instants are aware
datetimes and whose list columns are already lists.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rota.domain.access import ApiKey, AuditEntry, NewAuditEntry


def api_key_from_row(row: Mapping[str, Any]) -> ApiKey:
    return ApiKey(
        key_id=row["key_id"],
        secret_hash=row["secret_hash"],
        name=row["name"],
        scopes=tuple(row["scopes"]),
        namespaces=tuple(row["namespaces"]),
        created_by=row["created_by"],
        created_at=row["created_at"],
        revoked_at=row["revoked_at"],
    )


def audit_from_row(row: Mapping[str, Any]) -> AuditEntry:
    return AuditEntry(
        id=row["id"],
        at=row["at"],
        actor=row["actor"],
        action=row["action"],
        target=row["target"],
        namespace=row["namespace"],
        status=row["status"],
        outcome=row["outcome"],
        correlation_id=row["correlation_id"],
        detail=row["detail"],
    )


def audit_params(entry: NewAuditEntry) -> dict[str, Any]:
    return {
        "actor": entry.actor,
        "action": entry.action,
        "target": entry.target,
        "namespace": entry.namespace,
        "status": entry.status,
        "outcome": entry.outcome,
        "correlation_id": entry.correlation_id,
        "detail": entry.detail,
    }
