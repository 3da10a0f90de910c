"""Authentication and authorisation for the HTTP API.

Callers send ``Authorization: Bearer <credential>``: either a JWT signed with HS256 (the
only algorithm accepted) or an API key ``rota_<id>_<secret>``. Each route depends on a
:class:`ScopeGuard` naming the one scope it needs (and whether it acts on the whole
cluster); the guard authenticates, spends a rate-limit token, checks the scope and the
reach (403) and hands the route a :class:`Principal`. Namespaces are checked by the
routes (another namespace's resource is 404).

Failed authentications spend a budget per source address and per credential id; a
spent budget blocks that source or credential for the rest of its window, even with a
correct credential (docs/security.md). The rate limit and the budgets are counted in the
database, so they hold across every server process (rota.api.shared_limits, ADR 0036).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Annotated, Any

import jwt
import structlog
from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from rota.api.context import api_context
from rota.api.problems import ProblemException
from rota.api.ratelimit import RateLimiter
from rota.api.settings import ApiSettings
from rota.api.shared_limits import SharedLimits
from rota.domain.access import (
    API_KEY_PREFIX,
    Principal,
    Scope,
    parse_namespaces,
    parse_scopes,
    role_scopes,
    split_api_key,
)
from rota.errors import InvalidArgument
from rota.services import access

ALGORITHM = "HS256"  # pinned: a token naming any other algorithm (or "none") is refused
REQUIRED_CLAIMS = ["exp", "iat", "aud", "iss", "sub"]
log = structlog.get_logger("rota.api.auth")
bearer = HTTPBearer(auto_error=False, description="A JWT (HS256) or an API key (rota_...).")


def _unauthorized(detail: str, error: str | None = "invalid_token") -> ProblemException:
    challenge = 'Bearer realm="rota"' + (f', error="{error}"' if error else "")
    return ProblemException(401, detail, headers={"WWW-Authenticate": challenge})


def mint_token(
    settings: ApiSettings,
    subject: str,
    now: datetime,
    *,
    scopes: Iterable[str] = (),
    roles: Iterable[str] = (),
    namespaces: Iterable[str] = ("*",),
    ttl_seconds: int | None = None,
) -> str:
    """A signed token with the claims this API requires."""
    issued = int(now.timestamp())
    claims: dict[str, Any] = {
        "iss": settings.issuer,
        "aud": settings.audience,
        "sub": subject,
        "iat": issued,
        "exp": issued + (ttl_seconds or settings.dev_token_ttl_seconds),
        "scope": " ".join(sorted(set(scopes))),
        "roles": sorted(set(roles)),
        "namespaces": list(namespaces),
    }
    return jwt.encode(claims, settings.key, algorithm=ALGORITHM)


def principal_from_jwt(settings: ApiSettings, token: str) -> Principal:
    try:
        claims = jwt.decode(
            token,
            settings.key,
            algorithms=[ALGORITHM],
            audience=settings.audience,
            issuer=settings.issuer,
            leeway=timedelta(seconds=settings.leeway_seconds),
            options={"require": REQUIRED_CLAIMS, "strict_aud": True},
        )
    except jwt.ExpiredSignatureError:
        raise _unauthorized("the token has expired") from None
    except jwt.ImmatureSignatureError:
        raise _unauthorized("the token is not valid yet") from None
    except jwt.InvalidTokenError as exc:
        raise _unauthorized(f"the token is not valid: {exc}") from None
    subject = claims["sub"]
    if not isinstance(subject, str) or not subject.strip():
        raise _unauthorized("the token's subject (sub) is empty")
    lifetime = claims["exp"] - claims["iat"]
    if lifetime > settings.max_token_lifetime_seconds:
        raise _unauthorized(
            f"the token lives {lifetime:.0f} s (exp - iat); this server accepts at most "
            f"{settings.max_token_lifetime_seconds} s"
        )
    try:
        scope_text = claims.get("scope", "")
        roles = claims.get("roles", [])
        namespaces = claims.get("namespaces", ["default"])
        if not isinstance(scope_text, str) or not isinstance(roles, list):
            raise InvalidArgument("scope/roles", (scope_text, roles), "a string and a list")
        if not isinstance(namespaces, list):
            raise InvalidArgument("namespaces", namespaces, "a list of namespaces or ['*']")
        scopes = parse_scopes(scope_text.split()) | role_scopes(roles)
        reach = parse_namespaces(namespaces)
    except InvalidArgument as exc:
        raise _unauthorized(f"the token's claims are not valid: {exc}") from None
    return Principal(subject=subject, kind="jwt", scopes=scopes, namespaces=reach)


def client_address(request: Request) -> str:
    """The TCP peer, or what a configured trusted proxy says the client is (uvicorn
    rewrites the peer from X-Forwarded-For only for ROTA_TRUSTED_PROXIES)."""
    return request.client.host if request.client else "unknown"


def credential_id(credential: str) -> str | None:
    """Which credential this claims to be, without checking it: an API key's id, or a
    JWT's (unverified) subject. Never the secret part."""
    if credential.startswith(API_KEY_PREFIX):
        parts = split_api_key(credential)
        return f"api_key:{parts[0]}" if parts else None
    try:
        claims = jwt.decode(credential, options={"verify_signature": False})
    except jwt.InvalidTokenError:
        return None
    subject = claims.get("sub") if isinstance(claims, dict) else None
    if isinstance(subject, str) and 0 < len(subject) <= 200:
        return f"jwt:{subject}"
    return None


def _too_many(wait: float, what: str) -> ProblemException:
    retry = RateLimiter.retry_after(wait)
    return ProblemException(
        429, f"too many {what}; retry in {retry} s", headers={"Retry-After": retry}
    )


async def _spend(limits: SharedLimits, subject: str, what: str) -> None:
    wait = await limits.take(subject)
    if wait is not None:
        raise _too_many(wait, what)


def _failure_keys(request: Request, credential: str) -> list[str]:
    keys = [f"source:{client_address(request)}"]
    claimed = credential_id(credential)
    if claimed is not None:
        keys.append(f"credential:{claimed}")
    return keys


async def _check_budget(limits: SharedLimits, keys: list[str]) -> None:
    wait = await limits.blocked(keys)
    if wait is not None:
        raise _too_many(wait, "failed authentications")


async def authenticate(
    request: Request, credentials: HTTPAuthorizationCredentials | None
) -> Principal:
    context = api_context(request)
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise _unauthorized("this route needs a bearer token or API key", error=None)
    credential = credentials.credentials
    keys = _failure_keys(request, credential)
    try:
        await _check_budget(context.limits, keys)
    except ProblemException:
        request.state.auth_failure = "blocked"
        raise
    try:
        if credential.startswith(API_KEY_PREFIX):
            principal = await access.authenticate_api_key(await context.store(), credential)
            if principal is None:
                raise _unauthorized("the API key is not valid (unknown, revoked or mistyped)")
            return principal
        return principal_from_jwt(context.settings, credential)
    except ProblemException:
        # Guessing credentials costs the guesser: a budget per source and per credential.
        request.state.auth_failure = "api_key" if credential.startswith(API_KEY_PREFIX) else "jwt"
        await context.limits.fail(keys)
        raise


class ScopeGuard:
    """A route's auth rule: the one scope it needs, and whether it acts on the whole
    cluster (workers, limits, the leader): such a route also needs a caller who reaches
    every namespace, since its effect reaches every namespace. The auth-matrix test
    finds every route's guard; a route without one fails it."""

    def __init__(self, scope: Scope, cluster_wide: bool = False) -> None:
        self.scope = scope
        self.cluster_wide = cluster_wide

    async def __call__(
        self,
        request: Request,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    ) -> Principal:
        principal = await authenticate(request, credentials)
        request.state.principal = principal
        await _spend(api_context(request).limits, principal.who, "requests")
        self.check(principal)
        return principal

    def check(self, principal: Principal) -> None:
        """403 unless ``principal`` may pass (the dashboard's forms ask the same)."""
        if self.scope not in principal.scopes:
            held = ", ".join(sorted(s.value for s in principal.scopes)) or "none"
            raise ProblemException(
                403, f"this needs scope {self.scope.value}; the caller holds: {held}"
            )
        if self.cluster_wide and principal.namespaces is not None:
            raise ProblemException(
                403,
                "this acts on the whole cluster, so it needs a caller who reaches every "
                f"namespace ('*'); the caller reaches: {', '.join(sorted(principal.namespaces))}",
            )


GUARDS = {scope: ScopeGuard(scope) for scope in Scope}
CLUSTER_ADMIN_GUARD = ScopeGuard(Scope.ADMIN, cluster_wide=True)
Reader = Annotated[Principal, Depends(GUARDS[Scope.READ])]
Trigger = Annotated[Principal, Depends(GUARDS[Scope.TRIGGER])]
Manager = Annotated[Principal, Depends(GUARDS[Scope.MANAGE])]
Admin = Annotated[Principal, Depends(GUARDS[Scope.ADMIN])]
Publisher = Annotated[Principal, Depends(GUARDS[Scope.EVENTS])]
ClusterAdmin = Annotated[Principal, Depends(CLUSTER_ADMIN_GUARD)]
