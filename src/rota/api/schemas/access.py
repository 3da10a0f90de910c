"""Access bodies: API keys, the audit log, and development tokens."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, Field

from rota.api.schemas.fields import Name, Request
from rota.domain.access import ApiKey, AuditEntry, Role, Scope


class ApiKeyCreate(Request):
    name: Name
    scopes: Annotated[list[Scope], Field(min_length=1)]
    namespaces: Annotated[list[str], Field(min_length=1, max_length=100)] = Field(
        description='Namespaces the key reaches, or ["*"] for all.'
    )


class ApiKeyOut(BaseModel):
    key_id: str
    name: str
    scopes: list[str]
    namespaces: list[str]
    created_by: str
    created_at: datetime
    revoked_at: datetime | None

    @classmethod
    def of(cls, key: ApiKey) -> ApiKeyOut:
        return cls(
            key_id=key.key_id,
            name=key.name,
            scopes=list(key.scopes),
            namespaces=list(key.namespaces),
            created_by=key.created_by,
            created_at=key.created_at,
            revoked_at=key.revoked_at,
        )


class ApiKeyCreated(ApiKeyOut):
    key: str = Field(description="The key itself. Shown only now: store it safely.")


class ApiKeyList(BaseModel):
    items: list[ApiKeyOut]


class AuditOut(BaseModel):
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

    @classmethod
    def of(cls, entry: AuditEntry) -> AuditOut:
        # The entry's fields are the response's, one for one.
        return cls.model_validate(entry, from_attributes=True)


class AuditPage(BaseModel):
    items: list[AuditOut]
    next_cursor: str | None


class DevTokenRequest(Request):
    subject: Name = "dev"
    role: Role | None = Role.ADMIN
    scopes: list[Scope] = Field(default_factory=list)
    namespaces: Annotated[list[str], Field(min_length=1, max_length=100)] = Field(
        default_factory=lambda: ["*"]
    )
    ttl_seconds: Annotated[int, Field(ge=60, le=24 * 3600)] = 3600


class TokenOut(BaseModel):
    access_token: str
    token_type: str = "bearer"  # noqa: S105 - the OAuth 2 token type name, not a secret
    expires_in: int
    scopes: list[str]
    namespaces: list[str]
