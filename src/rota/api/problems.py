"""RFC 9457 problem details: every error the API answers is ``application/problem+json``.

Errors raised below the API (``RotaError``) map to statuses here, in one table, so a
route never builds an error response by hand. Field problems (400, 422) list each bad
field as a dotted path (``body.payload.day``, ``query.cursor``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from http import HTTPStatus
from typing import Any, get_args, get_origin

import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict
from starlette.exceptions import HTTPException as StarletteHTTPException

from rota import errors

PROBLEM_MEDIA_TYPE = "application/problem+json"
log = structlog.get_logger("rota.api")


class FieldProblem(BaseModel):
    model_config = ConfigDict(extra="forbid")
    field: str
    message: str


class Problem(BaseModel):
    """An RFC 9457 problem. ``type`` names the kind of problem (a ``urn:rota:problem:``
    URN); ``correlation_id`` ties it to the server's log lines."""

    type: str
    title: str
    status: int
    detail: str | None = None
    instance: str | None = None
    correlation_id: str | None = None
    errors: list[FieldProblem] | None = None


class ProblemException(Exception):
    """Raise from HTTP code (auth, rate limits, cursors) to answer with a problem."""

    def __init__(
        self,
        status: int,
        detail: str,
        *,
        kind: str | None = None,
        field_problems: Sequence[tuple[str, str]] = (),
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.kind = kind
        self.field_problems = list(field_problems)
        self.headers = dict(headers or {})


_KINDS = {
    400: "bad-request",
    401: "unauthorized",
    403: "forbidden",
    404: "not-found",
    405: "method-not-allowed",
    409: "conflict",
    413: "payload-too-large",
    422: "invalid-argument",
    429: "rate-limited",
    500: "internal-error",
    503: "unavailable",
}


def problem_response(
    request: Request | None,
    status: int,
    detail: str | None,
    *,
    kind: str | None = None,
    field_problems: Sequence[tuple[str, str]] = (),
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    scope_state = request.scope.get("state", {}) if request is not None else {}
    body = Problem(
        type=f"urn:rota:problem:{kind or _KINDS.get(status, 'error')}",
        title=HTTPStatus(status).phrase,
        status=status,
        detail=detail,
        instance=request.url.path if request is not None else None,
        correlation_id=scope_state.get("correlation_id"),
        errors=[FieldProblem(field=f, message=m) for f, m in field_problems] or None,
    )
    if request is not None:
        # The audit log records why a mutating call was refused: the kind of problem and
        # the fields named, never the detail text (it may quote what the caller sent).
        request.state.problem_kind = kind or _KINDS.get(status, "error")
        request.state.problem_fields = [name for name, _ in field_problems]
    return JSONResponse(
        body.model_dump(exclude_none=True),
        status_code=status,
        headers=dict(headers or {}),
        media_type=PROBLEM_MEDIA_TYPE,
    )


# RotaError -> (status, kind). Order matters: subclasses first.
_ERROR_STATUS: list[tuple[type[errors.RotaError], int, str]] = [
    (errors.InvalidPayload, 422, "invalid-payload"),
    (errors.CountChanged, 409, "count-changed"),
    (errors.UnknownHandler, 422, "unknown-handler"),
    (errors.InvalidArgument, 422, "invalid-argument"),
    (errors.RunNotFound, 404, "not-found"),
    (errors.JobNotFound, 404, "not-found"),
    (errors.ApiKeyNotFound, 404, "not-found"),
    (errors.JobExists, 409, "conflict"),
    (errors.JobUnreadable, 409, "unreadable-job"),
    (errors.InvalidTransition, 409, "invalid-transition"),
    (errors.StoreUnavailable, 503, "database-unavailable"),
    (errors.SchemaMismatch, 503, "schema-mismatch"),
]
_NOT_FOUND_NAMES = ("WorkerNotFound",)  # errors other modules add, matched by name


def status_of(exc: errors.RotaError) -> tuple[int, str]:
    for kind, status, name in _ERROR_STATUS:
        if isinstance(exc, kind):
            return status, name
    if type(exc).__name__ in _NOT_FOUND_NAMES or isinstance(exc, LookupError):
        return 404, "not-found"
    return 500, "internal-error"


# Domain errors name values in words; the API names them as its fields.
FIELD_NAMES = {
    "time zone": "timezone",
    "job name": "name",
    "cron expression": "cron",
    "interval": "interval_seconds",
    "timeout": "timeout_seconds",
    "catch_up_window": "catch_up_window_seconds",
    "jitter": "jitter_seconds",
}


def _field_problems(exc: errors.RotaError) -> list[tuple[str, str]]:
    if isinstance(exc, errors.InvalidPayload):
        return [(f"body.{name}", message) for name, message in exc.errors]
    if isinstance(exc, errors.InvalidArgument):
        return [(FIELD_NAMES.get(exc.name, exc.name), f"expected {exc.allowed}")]
    return []


async def _rota_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, errors.RotaError)
    status, kind = status_of(exc)
    if status >= 500:
        # The first line only: a database error's DETAIL/CONTEXT lines quote the data
        # it refused (a payload), and that must not reach the log (docs/security.md).
        first_line = str(exc).partition("\n")[0][:300]
        log.error("request failed", error=first_line, kind=type(exc).__name__)
    detail = str(exc) if status != 500 else "the server failed to handle this request"
    return problem_response(request, status, detail, kind=kind, field_problems=_field_problems(exc))


async def _problem(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ProblemException)
    return problem_response(
        request,
        exc.status,
        exc.detail,
        kind=exc.kind,
        field_problems=exc.field_problems,
        headers=exc.headers,
    )


def _location(loc: Sequence[Any]) -> str:
    return ".".join(str(part) for part in loc)


async def _validation(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    problems = exc.errors()
    if any(p.get("type") == "json_invalid" for p in problems):
        return problem_response(
            request,
            400,
            "the request body is not valid JSON",
            kind="malformed-json",
            field_problems=[("body", str(p.get("msg", ""))) for p in problems[:1]],
        )
    field_problems = [(_location(p.get("loc", ())), str(p.get("msg", ""))) for p in problems]
    listing = "; ".join(f"{f}: {m}" for f, m in field_problems)
    return problem_response(
        request, 422, f"invalid request: {listing}", field_problems=field_problems
    )


async def _http(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    headers = dict(getattr(exc, "headers", None) or {})
    if exc.status_code == 405:
        # Starlette names only the first route matching the path; a path served by
        # several routes (GET and POST /jobs) supports all their methods.
        headers["Allow"] = ", ".join(_methods_at(request))
    return problem_response(request, exc.status_code, str(exc.detail), headers=headers)


def _methods_at(request: Request) -> list[str]:
    from fastapi.routing import APIRoute, iter_route_contexts

    methods: set[str] = set()
    for context in iter_route_contexts(request.app.routes):
        route = context.original_route
        if isinstance(route, APIRoute) and route.path_regex.match(request.url.path):
            methods |= route.methods or set()
    return sorted(methods)


def install(app: FastAPI) -> None:
    app.add_exception_handler(errors.RotaError, _rota_error)
    app.add_exception_handler(ProblemException, _problem)
    app.add_exception_handler(RequestValidationError, _validation)
    app.add_exception_handler(StarletteHTTPException, _http)


def responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI declarations of the problems a route may answer with."""
    return {
        status: {"model": Problem, "description": HTTPStatus(status).phrase}
        for status in sorted(statuses)
    }


# What any authenticated route may answer besides its own statuses.
AUTHENTICATED = (401, 403, 413, 422, 429, 503)


async def refuse_unknown_query(request: Request) -> None:
    """Unknown query parameters are a 422, like unknown body fields (a misspelt filter
    must not silently return everything), and so is a single-valued one given twice."""
    from fastapi.routing import APIRoute

    route = request.scope.get("route")
    if not isinstance(route, APIRoute):
        return
    single: set[str] = set()
    multiple: set[str] = set()
    stack = [route.dependant]
    while stack:
        dependant = stack.pop()
        for param in dependant.query_params:
            (multiple if _is_list(param.field_info.annotation) else single).add(param.alias)
        stack.extend(dependant.dependencies)
    problems = [
        (f"query.{name}", "not a parameter of this operation")
        for name in sorted(set(request.query_params) - single - multiple)
    ]
    problems += [
        (f"query.{name}", "given more than once; it takes one value")
        for name in sorted(single)
        if len(request.query_params.getlist(name)) > 1
    ]
    if problems:
        listing = "; ".join(f"{field}: {message}" for field, message in problems)
        raise ProblemException(422, f"invalid query: {listing}", field_problems=problems)


def _is_list(annotation: Any) -> bool:
    if get_origin(annotation) in (list, tuple, set, frozenset):
        return True
    return any(_is_list(arg) for arg in get_args(annotation))
