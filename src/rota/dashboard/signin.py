"""Sign-in with a token or API key (checked exactly as the API checks a bearer
credential, failed-attempt budget and audit entry included) and sign-out."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import Annotated

import jwt
from fastapi import APIRouter, Depends, Request
from fastapi.responses import RedirectResponse, Response
from fastapi.security import HTTPAuthorizationCredentials

from rota.api.auth import authenticate
from rota.api.problems import ProblemException
from rota.dashboard.sessions import (
    COOKIE,
    SESSION_SECONDS,
    Session,
    encode,
    new_session,
    tokens_match,
)
from rota.dashboard.web import checked_form, dashboard, form, local_path, page, viewer
from rota.domain.access import API_KEY_PREFIX, Scope, split_api_key

router = APIRouter()
SIGNIN_COOKIE = "rota_signin"  # double-submit token: the sign-in form is a form too
MAX_CREDENTIAL = 4096


def _secure(request: Request) -> bool:
    return request.url.scheme == "https"


@router.get("/signin", name="signin_page")
async def signin_page(request: Request, next: str | None = None) -> Response:
    return _signin_form(request, local_path(next), None, 200)


def _signin_form(request: Request, target: str, error: str | None, status: int) -> Response:
    token = secrets.token_urlsafe(18)
    response = page(
        request, "signin.html", None, status=status, next=target, error=error, signin_token=token
    )
    response.set_cookie(
        SIGNIN_COOKIE,
        token,
        max_age=600,
        path="/signin",
        httponly=True,
        samesite="strict",
        secure=_secure(request),
    )
    return response


@router.post("/signin", name="signin")
async def signin(request: Request) -> Response:
    fields = await form(request)
    target = local_path(fields.get("next", ["/"])[0])
    given = fields.get("signin_token", [""])[0]
    expected = request.cookies.get(SIGNIN_COOKIE, "")
    if not expected or not tokens_match(given, expected):
        return _signin_form(
            request, target, "The sign-in form expired or was not ours; try again.", 403
        )
    credential = fields.get("credential", [""])[0].strip()
    if not credential or len(credential) > MAX_CREDENTIAL:
        return _signin_form(request, target, "Paste a token or an API key (rota_…).", 400)
    try:
        principal = await authenticate(
            request, HTTPAuthorizationCredentials(scheme="Bearer", credentials=credential)
        )
    except ProblemException as exc:
        return _signin_form(request, target, f"Not signed in: {exc.detail}.", exc.status)
    if Scope.READ not in principal.scopes:
        return _signin_form(
            request, target, "Not signed in: the dashboard needs scope jobs:read.", 403
        )
    context = dashboard(request)
    session = new_session(
        principal,
        context.api.clock.now(),
        _token_expiry(credential),
        _api_key_id(credential),
    )
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(
        COOKIE,
        encode(session, context.session_key),
        max_age=SESSION_SECONDS,
        path="/",
        httponly=True,
        samesite="strict",
        secure=_secure(request),
    )
    response.delete_cookie(SIGNIN_COOKIE, path="/signin")
    return response


@router.post("/signout", name="signout")
async def signout(request: Request, session: Annotated[Session, Depends(viewer)]) -> Response:
    await checked_form(request, session)
    context = dashboard(request)
    # Written to the store: every server process refuses this cookie from now on.
    await (await context.store()).sign_out_session(
        session.session_id,
        datetime.fromtimestamp(session.expires_at, UTC),
        context.api.clock.now(),
    )
    response = RedirectResponse("/signin", status_code=303)
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
    return response


def _token_expiry(credential: str) -> float | None:
    """A JWT's own expiry (already verified by authenticate), which the session keeps."""
    if credential.startswith(API_KEY_PREFIX):
        return None
    claims = jwt.decode(credential, options={"verify_signature": False})
    return float(claims["exp"])


def _api_key_id(credential: str) -> str | None:
    parts = split_api_key(credential) if credential.startswith(API_KEY_PREFIX) else None
    return parts[0] if parts else None
