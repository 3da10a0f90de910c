"""Every route of the API, driven with extreme values, on SQLite and PostgreSQL: no
input may make a 5xx (issue 8, finding 3). A 500 is always a bug.

The operations and their parameters are read from /openapi.json, so a new route or
parameter is fuzzed without touching this file. Hypothesis draws each request: every
path, query and header parameter is left out, given a plausible value, or given an edge
(integers around every int32/int53/int64 boundary and past them, negative numbers,
empty and 10,000-character strings, NUL and other control characters, unpaired
surrogates sent as invalid UTF-8, instants at and past the ends of the calendar,
cursors over out-of-range ids); every JSON body field likewise, plus what only JSON
text can carry (NaN, 1e400, unpaired surrogate escapes, 5,000-digit integers, deep
nesting). tests/api/test_schemathesis.py checks the answers against the document; this
test exists to find the server errors that generated "valid" data rarely reaches.
"""

from __future__ import annotations

import base64
import json
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rota
from rota.api.auth import mint_token
from rota.asgi import create_api
from rota.engine.planner import Planner
from tests.portal import Portal, served_in_portal

from .conftest import ADMIN, api_settings, make_rota_app

EXAMPLES_PER_OPERATION = 10
OMIT = object()

INT_EDGES = [
    -(2**64),
    -(2**63) - 1,
    -(2**63),
    -(2**31) - 1,
    -(2**31),
    -1,
    0,
    1,
    2,
    100,
    101,
    1000,
    1001,
    2**31 - 1,
    2**31,
    2**32,
    2**53 - 1,
    2**53,
    2**53 + 1,
    2**63 - 1,
    2**63,
    2**64,
    10**30,
]
INSTANT_EDGES = [
    "0001-01-01T00:00:00+01:00",
    "0001-01-01T00:00:00Z",
    "0001-01-01T00:00:00-14:00",
    "9999-12-31T23:59:59-01:00",
    "9999-12-31T23:59:59.999999Z",
    "9999-12-31T23:59:59+14:00",
    "1969-12-31T23:59:59Z",
    "1970-01-01T00:00:00Z",
    "8999-12-31T23:59:59Z",
    "9000-01-01T00:00:00Z",
    "2030-01-01T00:00:00+23:59",
    "2030-01-01T00:00:00",
    "2030-02-30T00:00:00Z",
    "+10000-01-01T00:00:00Z",
    "2030-01-01",
    "0",
    "-1",
    "1e400",
]
TEXT_EDGES = [
    "",
    " ",
    "\x00",
    "a\x00b",
    "\x01\x02\x1f\x7f",
    "\t",
    "a\n",
    "\r\n",
    "\u0085",
    "\u2028",
    "\u202e",
    "\ufeff",
    "\ufffe",
    "é",
    "😀",
    "\ud800",
    "a\udfffb",
    "%00",
    "%",
    "_",
    "*",
    "'\"",
    "\\",
    "../..",
    "x" * 129,
    "x" * 10_000,
    "NaN",
    "null",
    "true",
]
PLAUSIBLE: dict[str, list[Any]] = {
    "name": ["manual", "nightly", "fuzz-job"],
    "namespace": ["default", "team-a"],
    "handler": ["anything", "report", "mapping", "export"],
    "queue": ["default"],
    "tag": ["gpu"],
    "job": ["nightly", "manual"],
    "state": ["pending", "dead_lettered"],
    "run_id": [1, 2, 3],
    "node_id": ["node-1"],
    "key_id": ["0123456789abcdef"],
    "limit": [1, 50, 200],
    "count": [1, 10],
    "expression": ["0 2 * * *", "* * * * *"],
    "cron": ["0 2 * * *"],
    "timezone": ["UTC", "Europe/Berlin"],
    "interval_seconds": [60, 0.5],
    "at": ["2030-01-01T00:00:00Z"],
    "created_after": ["2026-01-01T00:00:00Z"],
    "created_before": ["2030-01-01T00:00:00Z"],
    "payload": [None, {}, {"day": "2026-01-01"}, [1, 2]],
    "scopes": [["jobs:read"]],
    "namespaces": [["*"], ["default"]],
    "run_ids": [[1], [1, 2]],
    "subject": ["dev"],
    "role": ["admin"],
    "ttl_seconds": [3600],
    "Idempotency-Key": ["k1"],
}


def _cursor(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


CURSOR_EDGES = [_cursor(f"{kind}:{n}") for kind in ("run", "audit") for n in INT_EDGES] + [
    _cursor("run:1:2"),
    _cursor("run:01"),
    "!!!",
]


class JsonText(str):
    """A fragment of JSON text put into a body as is (NaN, 1e400, huge integers)."""


JSON_TEXT_EDGES = [
    JsonText("NaN"),
    JsonText("Infinity"),
    JsonText("-Infinity"),
    JsonText("1e400"),
    JsonText("-1e400"),
    JsonText("9" * 5000),
    JsonText("-0.0"),
    JsonText("5e-324"),
    JsonText("1.7976931348623157e308"),
    JsonText('"\\ud800"'),
    JsonText('"a\\udc00b"'),
    JsonText('"\\u0000"'),
    JsonText('{"\\u0000": 1}'),
    JsonText("[" * 150 + "]" * 150),
    JsonText('{"a":' * 150 + "1" + "}" * 150),
]


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    params: tuple[tuple[str, str, bool, str], ...]  # (where, name, required, kind)
    body: tuple[str, ...] | None  # the body's field names, if it has a JSON body

    def __str__(self) -> str:
        return f"{self.method} {self.path}"


def _operations() -> list[Operation]:
    folder = Path(tempfile.mkdtemp(prefix="rota-fuzz-spec-"))
    app = make_rota_app(f"sqlite:///{folder}/spec.db")
    spec = create_api(app, api_settings()).openapi()
    app.close()
    schemas = spec["components"]["schemas"]
    operations = []
    for path, methods in spec["paths"].items():
        for method, op in methods.items():
            params = tuple(
                (p["in"], p["name"], bool(p.get("required")), _kind(p["name"], p["schema"]))
                for p in op.get("parameters", ())
            )
            body = None
            content = op.get("requestBody", {}).get("content", {}).get("application/json")
            if content is not None:
                ref = _ref(content["schema"])
                body = tuple(schemas[ref]["properties"]) if ref else ()
            operations.append(Operation(method.upper(), path, params, body))
    return operations


def _kind(name: str, schema: dict[str, Any]) -> str:
    """Which edges suit a parameter: cursor, integer, date-time or (any) text."""
    if name == "cursor":
        return "cursor"
    text = json.dumps(schema)
    if '"integer"' in text:
        return "integer"
    if '"date-time"' in text:
        return "date-time"
    return "text"


EDGES_BY_KIND = {
    "cursor": CURSOR_EDGES + TEXT_EDGES,
    "integer": [str(n) for n in INT_EDGES] + ["1.5", "1e3", "", "\x00", "0x10"],
    "date-time": [*INSTANT_EDGES, "", "\x00"],
    "text": TEXT_EDGES + [str(n) for n in INT_EDGES[::4]],
}


def _ref(schema: dict[str, Any]) -> str | None:
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    for option in schema.get("anyOf", ()):
        found = _ref(option)
        if found:
            return found
    return None


OPERATIONS = _operations()


def _text_edges() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(TEXT_EDGES),
        st.sampled_from([str(n) for n in INT_EDGES]),
        st.sampled_from(INSTANT_EDGES),
        st.sampled_from(CURSOR_EDGES),
        st.text(alphabet=st.characters(max_codepoint=0x2FF, exclude_categories=()), max_size=20),
        st.text(alphabet=st.characters(categories=["Cc", "Cs", "Co", "Cn"]), max_size=8),
    )


def _param_value(name: str) -> st.SearchStrategy[Any]:
    plausible = [str(v) for v in PLAUSIBLE.get(name, [])]
    options: list[st.SearchStrategy[Any]] = [_text_edges()]
    if plausible:
        options.insert(0, st.sampled_from(plausible))
    return st.one_of(*options)


def _json_edges() -> st.SearchStrategy[Any]:
    scalars = st.one_of(
        st.sampled_from(INT_EDGES),
        st.sampled_from([0.0, -0.0, 0.5, 1e308, -1e308, 5e-324]),
        st.sampled_from(TEXT_EDGES + INSTANT_EDGES),
        st.sampled_from(JSON_TEXT_EDGES),
        st.none(),
        st.booleans(),
        st.text(alphabet=st.characters(categories=["Cc", "Cs"]), max_size=5),
    )
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.dictionaries(st.sampled_from(["a", "\x00", "\ud800", "day", ""]), inner, max_size=3),
        ),
        max_leaves=6,
    )


def _field_value(name: str) -> st.SearchStrategy[Any]:
    plausible = PLAUSIBLE.get(name, [])
    if plausible:
        return st.one_of(st.sampled_from(plausible), _json_edges())
    return _json_edges()


def _encode(value: Any) -> str:
    """JSON text for ``value``; JsonText fragments go in as they are, and strings keep
    unpaired surrogates as \\u escapes (which is how a client would send them)."""
    if isinstance(value, JsonText):
        return str(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{_encode(str(k))}:{_encode(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_encode(v) for v in value) + "]"
    return json.dumps(value, allow_nan=True)


@st.composite
def requests(draw: st.DrawFn, operation: Operation) -> dict[str, Any]:
    path = operation.path
    query: list[tuple[str, str]] = []
    headers: dict[str, str] = {}
    for where, name, required, _ in operation.params:
        value = (
            draw(_param_value(name))
            if required
            else draw(st.one_of(st.just(OMIT), _param_value(name)))
        )
        if value is OMIT:
            continue
        if where == "path":
            path = path.replace("{" + name + "}", _quote(value))
        elif where == "query":
            query.append((name, value))
        elif where == "header":
            headers[name] = value
    body = None
    if operation.body is not None:
        if draw(st.integers(0, 9)) == 0:
            body = _encode(draw(_json_edges()))
        else:
            fields = {}
            for name in operation.body:
                value = draw(st.one_of(st.just(OMIT), _field_value(name)))
                if value is not OMIT:
                    fields[name] = value
            body = _encode(fields)
    if query:
        path += "?" + "&".join(f"{_quote(k)}={_quote(v)}" for k, v in query)
    return {"method": operation.method, "url": path, "headers": headers, "body": body}


def _quote(value: str) -> str:
    # Unpaired surrogates go over the wire as the bytes they would be (invalid UTF-8).
    return quote(value, safe="", errors="surrogatepass")


@dataclass
class Fuzzed:
    portal: Portal
    client: httpx.AsyncClient
    admin: dict[str, str]
    app: rota.App

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        response: httpx.Response = self.portal.call(self.client.request(method, url, **kwargs))
        return response


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def fuzzed(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Fuzzed]:
    token = mint_token(api_settings(), "fuzz", datetime.now(UTC), scopes=ADMIN)
    with served_in_portal(request, tmp_path_factory, "fuzz") as served:
        admin = {"Authorization": f"Bearer {token}"}
        yield Fuzzed(served.portal, served.client, admin, served.app)


def _seed(fuzzed: Fuzzed) -> None:
    """Things for the plausible names and ids to find."""
    admin = fuzzed.admin
    for job in (
        {"name": "nightly", "handler": "report", "payload": {"day": "d"}, "cron": "0 2 * * *"},
        {"name": "manual", "handler": "anything", "payload": 1},
    ):
        fuzzed.request("DELETE", f"/api/v1/jobs/{job['name']}", headers=admin)
        made = fuzzed.request("POST", "/api/v1/jobs", json=job, headers=admin)
        assert made.status_code == 201, made.text
    for _ in range(3):
        triggered = fuzzed.request("POST", "/api/v1/jobs/manual/trigger", headers=admin)
        assert triggered.status_code == 202, triggered.text


@pytest.mark.parametrize("operation", OPERATIONS, ids=str)
def test_no_input_makes_a_server_error(fuzzed: Fuzzed, operation: Operation) -> None:
    _seed(fuzzed)

    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(request=requests(operation))
    def check(request: dict[str, Any]) -> None:
        headers = {**fuzzed.admin, **request["headers"]}
        content = None
        if request["body"] is not None:
            headers["Content-Type"] = "application/json"
            content = request["body"].encode("utf-8", "surrogatepass")
        try:
            response = fuzzed.request(
                request["method"], request["url"], headers=headers, content=content
            )
        except (UnicodeEncodeError, ValueError) as exc:
            # The client itself would not send it (a header value outside latin-1, or
            # with a line break): nothing reached the server.
            if request["headers"]:
                return
            raise AssertionError(f"{request!r}: the client refused: {exc}") from exc
        assert response.status_code < 500, f"{request!r} -> {response.status_code} {response.text}"

    check()


def _plausible_request(operation: Operation) -> tuple[str, dict[str, str], dict[str, str]]:
    """The operation's path with plausible path values, and its required query values."""
    path = operation.path
    query: dict[str, str] = {}
    for where, name, required, _ in operation.params:
        value = str(PLAUSIBLE.get(name, ["x"])[0])
        if where == "path":
            path = path.replace("{" + name + "}", _quote(value))
        elif where == "query" and required:
            query[name] = value
    return path, query, {}


def _send(
    fuzzed: Fuzzed,
    method: str,
    path: str,
    query: dict[str, str],
    headers: dict[str, str],
    body: str | None,
) -> tuple[str, int] | None:
    """The request and its status if the server failed it (a 5xx), else None."""
    url = path + (
        "?" + "&".join(f"{_quote(k)}={_quote(v)}" for k, v in query.items()) if query else ""
    )
    all_headers = {**fuzzed.admin, **headers}
    content = None
    if body is not None:
        all_headers["Content-Type"] = "application/json"
        content = body.encode("utf-8", "surrogatepass")
    try:
        response = fuzzed.request(method, url, headers=all_headers, content=content)
    except (UnicodeEncodeError, ValueError):
        if headers:
            return None  # a header value no client can send
        raise
    if response.status_code >= 500:
        return (
            f"{method} {url} headers={headers!r} body={(body or '')[:200]!r}",
            response.status_code,
        )
    return None


@pytest.mark.parametrize("operation", OPERATIONS, ids=str)
def test_every_parameter_edge(fuzzed: Fuzzed, operation: Operation) -> None:
    """Each path, query and header parameter in turn takes every edge of its kind,
    the others plausible: deterministic, so a known edge is never left to chance."""
    _seed(fuzzed)
    failures = []
    for where, name, _, kind in operation.params:
        for edge in EDGES_BY_KIND[kind]:
            path, query, headers = _plausible_request(operation)
            if where == "path":
                path = operation.path
                for other_where, other, _, _ in operation.params:
                    if other_where == "path":
                        value = edge if other == name else str(PLAUSIBLE.get(other, ["x"])[0])
                        path = path.replace("{" + other + "}", _quote(value))
            elif where == "query":
                query[name] = edge
            else:
                headers[name] = edge
            body = "{}" if operation.body is not None else None
            failed = _send(fuzzed, operation.method, path, query, headers, body)
            if failed:
                failures.append(failed)
    assert not failures, f"{len(failures)} server errors, e.g. {failures[:5]}"


BODY_EDGES: list[Any] = [
    *INT_EDGES,
    0.5,
    -0.0,
    1e308,
    *TEXT_EDGES,
    *INSTANT_EDGES,
    *JSON_TEXT_EDGES,
    None,
    True,
    [],
    {},
    ["\x00"],
    {"\x00": 1},
    {"\ud800": 1},
]


@pytest.mark.parametrize("operation", [op for op in OPERATIONS if op.body], ids=str)
def test_every_body_field_edge(fuzzed: Fuzzed, operation: Operation) -> None:
    """Each field of a JSON body in turn takes every edge, the others plausible; and
    every job that was accepted can be planned (one must not stop the planner)."""
    _seed(fuzzed)
    assert operation.body is not None
    # One trigger kind (a cron), so that the plausible part of a job is valid.
    plausible = {
        name: PLAUSIBLE[name][0]
        for name in operation.body
        if name in PLAUSIBLE and name not in ("interval_seconds", "at")
    }
    failures = []
    for name in operation.body:
        for number, edge in enumerate(BODY_EDGES):
            fields = {**plausible, name: edge}
            if "name" in fields and name != "name":
                fields["name"] = f"fuzz-{name}-{number}"  # a new job each time
            path, query, headers = _plausible_request(operation)
            failed = _send(fuzzed, operation.method, path, query, headers, _encode(fields))
            if failed:
                failures.append(failed)
    assert not failures, f"{len(failures)} server errors, e.g. {failures[:5]}"
    report = fuzzed.portal.call(_plan(fuzzed.app))
    assert getattr(report, "set_aside", 0) == 0, report


async def _plan(app: rota.App) -> object:
    """A planner tick far enough ahead that every accepted schedule is due."""
    planner = Planner(await app.store(), timedelta(0))
    return await planner.tick(datetime.now(UTC) + timedelta(days=400))
