"""Authentication and authorisation for the HTTP API.

Callers send ``Authorization: Bearer <credential>``: either a JWT signed with HS256 (the
only algorithm accepted) or an API key ``rota_<id>_<secret>``. Each route depends on a
:class:`ScopeGuard` naming the one scope it needs; the guard authenticates, spends a
rate-limit token, checks the scope (403) and hands the route a :class:`Principal`.
Namespaces are checked by the routes (another namespace's resource is 404).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Annotated, Any

import jwt
import structlog
from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from rota import access
from rota.api.context import api_context
from rota.api.problems import ProblemException
from rota.api.ratelimit import RateLimiter
from rota.api.settings import ApiSettings
from rota.domain.access import (
    API_KEY_PREFIX,
    Principal,
    Scope,
    parse_namespaces,
    parse_scopes,
    role_scopes,
)
from rota.errors import InvalidArgument

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
    return Principal(subject=str(claims["sub"]), kind="jwt", scopes=scopes, namespaces=reach)


def _client(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def _spend(limiter: RateLimiter, subject: str, what: str) -> None:
    wait = limiter.take(subject)
    if wait is not None:
        raise ProblemException(
            429,
            f"too many {what}; retry in {RateLimiter.retry_after(wait)} s",
            headers={"Retry-After": RateLimiter.retry_after(wait)},
        )


async def authenticate(
    request: Request, credentials: HTTPAuthorizationCredentials | None
) -> Principal:
    context = api_context(request)
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise _unauthorized("this route needs a bearer token or API key", error=None)
    credential = credentials.credentials
    try:
        if credential.startswith(API_KEY_PREFIX):
            principal = await access.authenticate_api_key(await context.store(), credential)
            if principal is None:
                raise _unauthorized("the API key is not valid (unknown, revoked or mistyped)")
            return principal
        return principal_from_jwt(context.settings, credential)
    except ProblemException:
        # Guessing credentials costs the guesser: failures spend a per-address budget.
        _spend(context.failed_auth, _client(request), "failed authentications")
        raise


class ScopeGuard:
    """A route's auth rule: the one scope it needs. The auth-matrix test finds every
    route's guard; a route without one fails it."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope

    async def __call__(
        self,
        request: Request,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    ) -> Principal:
        principal = await authenticate(request, credentials)
        request.state.principal = principal
        _spend(api_context(request).limiter, principal.who, "requests")
        if self.scope not in principal.scopes:
            held = ", ".join(sorted(s.value for s in principal.scopes)) or "none"
            raise ProblemException(
                403, f"this needs scope {self.scope.value}; the caller holds: {held}"
            )
        return principal


GUARDS = {scope: ScopeGuard(scope) for scope in Scope}
Reader = Annotated[Principal, Depends(GUARDS[Scope.READ])]
Trigger = Annotated[Principal, Depends(GUARDS[Scope.TRIGGER])]
Manager = Annotated[Principal, Depends(GUARDS[Scope.MANAGE])]
Admin = Annotated[Principal, Depends(GUARDS[Scope.ADMIN])]
