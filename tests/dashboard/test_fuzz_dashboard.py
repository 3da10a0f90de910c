"""Every dashboard route and form, driven with hostile values, signed in and not, on
SQLite and PostgreSQL: no input makes a 5xx, and none writes a traceback to the log
(issue 31: '²' in a path and a 700-field form each answered 500 with ~150 lines of
traceback, the form one before sign-in). tests/api/test_fuzz_edges.py does this for
the JSON API.

The routes are read from the dashboard's routers, so a new page or form is fuzzed
without touching this file. Each path parameter, query parameter and form field takes
every edge in turn (deterministic), then hypothesis draws whole requests mixing them.
Forms are sent with the session's real CSRF token half the time, so the values reach
the route's own reading, not only the CSRF check."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rota.dashboard import actions, breakers, events, pages, signin
from rota.dashboard.web import MAX_FORM_VALUES
from tests.portal import Portal, served_in_portal

from .conftest import bearer, csrf_of, sign_in, token

pytestmark = pytest.mark.timeout(300)

EXAMPLES = 60
EDGES = [
    "",
    "0",
    "1",
    "-1",
    "+1",
    " 1",
    "1.5",
    "1e3",
    "0x10",
    "\u00b2",  # '²': str.isdigit() says yes, int() says no
    "\u0663",  # Arabic-Indic three: int() reads it
    "\uff11",  # fullwidth one
    "9" * 20,
    "9" * 5000,
    str(2**53),
    str(2**63),
    "\x00",
    "a\x00b",
    "\ud800",
    "\u202e",
    "😀",
    "x" * 10_000,
    "%",
    "../..",
    "//evil.example",
    "\\\\evil",
    "*",
    "2030-01-01T00:00:00Z",
    "9999-12-31T23:59:59+14:00",
    "pending",
    "cancel",
    "requeue",
]
# What routes read from the query string and forms themselves (not declared on the
# route, so not found by reading it): the runs filters, notices, and form fields.
QUERY_NAMES = (
    "namespace", "queue", "handler", "job", "tag", "state", "q", "created_after",
    "created_before", "before", "notice", "n", "next", "after", "final", "since",
)  # fmt: skip
FORM_NAMES = (
    "credential", "signin_token", "next", "run_id", "action", "back", "scope", "name",
    "max_running", "rate", "handler", "key", "cron", "interval_seconds", "timezone",
    "misfire", "overlap", "priority", "max_attempts",
)  # fmt: skip
PLAUSIBLE = {
    "run_id": "1",
    "workflow_run_id": "1",
    "namespace": "default",
    "name": "manual",
    "node_id": "node-1",
    "notice": "cancelled-many",
}


@dataclass(frozen=True)
class Route:
    method: str
    path: str

    def __str__(self) -> str:
        return f"{self.method} {self.path}"

    @property
    def path_names(self) -> list[str]:
        return re.findall(r"{(\w+)}", self.path)


ROUTES = sorted(
    {
        Route(method, route.path)
        for module in (signin, events, actions, pages, breakers)
        for route in module.router.routes
        for method in getattr(route, "methods", ())
        if route.path != "/events"  # a stream that stays open: tested on its own
    },
    key=str,
)


@dataclass
class Dashboard:
    portal: Portal
    anonymous: httpx.AsyncClient
    signed_in: httpx.AsyncClient
    csrf: str

    def send(self, signed: bool, method: str, url: str, form: str | None) -> httpx.Response:
        client = self.signed_in if signed else self.anonymous
        headers = {"content-type": "application/x-www-form-urlencoded"} if form is not None else {}
        content = None if form is None else form.encode("utf-8", "surrogatepass")
        response: httpx.Response = self.portal.call(
            client.request(method, url, headers=headers, content=content)
        )
        return response


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def dashboard(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Dashboard]:
    with served_in_portal(request, tmp_path_factory, "dash-fuzz") as served:
        portal = served.portal
        signed = portal.call(
            served.stack.enter_async_context(
                httpx.AsyncClient(
                    transport=httpx.ASGITransport(app=served.api), base_url="http://t"
                )
            )
        )
        portal.call(_seed(signed))
        csrf = csrf_of(portal.call(signed.get("/runs")))
        yield Dashboard(portal, served.client, signed, csrf)


async def _seed(client: httpx.AsyncClient) -> None:
    """A session, and a job with a run for the plausible names and ids to find."""
    answer = await sign_in(client, token())
    assert answer.status_code == 303, answer.text
    job = {"name": "manual", "handler": "anything", "payload": 1}
    made = await client.post("/api/v1/jobs", json=job, headers=bearer(token()))
    assert made.status_code == 201, made.text
    triggered = await client.post("/api/v1/jobs/manual/trigger", headers=bearer(token()))
    assert triggered.status_code == 202, triggered.text


def _quote(value: str) -> str:
    return quote(value, safe="", errors="surrogatepass")


def _url(route: Route, path_values: dict[str, str], query: list[tuple[str, str]]) -> str:
    path = route.path
    for name in route.path_names:
        path = path.replace(
            "{" + name + "}", _quote(path_values.get(name, PLAUSIBLE.get(name, "x")))
        )
    if query:
        path += "?" + "&".join(f"{_quote(k)}={_quote(v)}" for k, v in query)
    return path


def _form(fields: list[tuple[str, str]], csrf: str | None) -> str:
    pairs = ([("csrf", csrf)] if csrf else []) + fields
    return "&".join(f"{_quote(k)}={_quote(v)}" for k, v in pairs)


class Failures:
    """5xx answers and tracebacks in the output, collected over a test."""

    def __init__(self, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture):
        self.capsys, self.caplog = capsys, caplog
        self.found: list[str] = []

    def check(self, what: str, response: httpx.Response) -> None:
        if response.status_code >= 500:
            self.found.append(f"{what} -> {response.status_code}")
        out, err = self.capsys.readouterr()
        logged = out + err + self.caplog.text
        self.caplog.clear()
        if "Traceback" in logged or "unhandled error" in logged:
            self.found.append(f"{what} -> a traceback in the log")


@pytest.fixture
def failures(capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> Failures:
    caplog.set_level(logging.INFO)
    return Failures(capsys, caplog)


@pytest.mark.parametrize("route", ROUTES, ids=str)
def test_every_edge_in_every_place(dashboard: Dashboard, route: Route, failures: Failures) -> None:
    """Each path parameter in turn takes every edge (the others plausible); every query
    parameter and form field a route may read takes each edge at once (a route reads
    its fields one after another, and a bad one is a 400 without a 500 in between);
    signed in (with the real CSRF token) and not."""
    cases: list[tuple[dict[str, str], list[tuple[str, str]], list[tuple[str, str]]]] = []
    for edge in EDGES:
        cases += [({name: edge}, [], []) for name in route.path_names]
        fields = [(name, edge) for name in FORM_NAMES] if route.method == "POST" else []
        if len(edge) < 1000:
            cases.append(({}, [(name, edge) for name in QUERY_NAMES], fields))
        else:  # one at a time: all of them would pass the 64 KiB a URL may hold
            cases += [({}, [(name, edge)], []) for name in QUERY_NAMES]
            cases.append(({}, [], fields))
    for signed in (True, False):
        for path_values, query, fields in cases:
            form = None
            if route.method == "POST":
                form = _form(fields, dashboard.csrf if signed else None)
            url = _url(route, path_values, query)
            response = dashboard.send(signed, route.method, url, form)
            failures.check(
                f"{route.method} {url[:120]} signed={signed} form={form!r:.80}", response
            )
    assert not failures.found, f"{len(failures.found)} failures, e.g. {failures.found[:5]}"


@pytest.mark.parametrize("route", [r for r in ROUTES if r.method == "POST"], ids=str)
def test_over_large_and_malformed_forms(
    dashboard: Dashboard, route: Route, failures: Failures
) -> None:
    """Too many fields, too many bytes, not UTF-8, not urlencoded: 400 or 413."""
    bodies = {
        "fields": "&".join(f"f{i}=x" for i in range(MAX_FORM_VALUES + 100)),
        "bytes": "credential=" + "x" * 100_000,
        "not-utf8": "credential=%ff%fe",
        "raw-not-utf8": "credential=\udcff",
        "json": '{"credential": 1}',
        "separators": "&&&===&=&",
    }
    for signed in (True, False):
        for kind, body in bodies.items():
            url = _url(route, {}, [])
            response = dashboard.send(signed, "POST", url, body)
            failures.check(f"{route} signed={signed} {kind}", response)
            if kind in ("fields", "bytes"):
                assert response.status_code in (303, 413), (str(route), signed, kind)
    assert not failures.found, f"{len(failures.found)} failures, e.g. {failures.found[:5]}"


@st.composite
def requests(draw: st.DrawFn) -> tuple[bool, Route, str, str | None]:
    route = draw(st.sampled_from(ROUTES))
    values = st.one_of(st.sampled_from(EDGES), st.text(max_size=30))
    path_values = {name: draw(values) for name in route.path_names}
    query = draw(st.lists(st.tuples(st.sampled_from(QUERY_NAMES), values), max_size=4))
    form = None
    if route.method == "POST":
        fields = draw(st.lists(st.tuples(st.sampled_from(FORM_NAMES), values), max_size=6))
        form = _form(fields, draw(st.sampled_from([None, "forged"])))
    return draw(st.booleans()), route, _url(route, path_values, query), form


def test_random_requests(dashboard: Dashboard, failures: Failures) -> None:
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(request=requests())
    def check(request: tuple[bool, Route, str, str | None]) -> None:
        signed, route, url, form = request
        if signed and form is not None and "csrf=forged" in form:
            form = form.replace("csrf=forged", f"csrf={dashboard.csrf}")
        response = dashboard.send(signed, route.method, url, form)
        failures.check(f"{route.method} {url[:120]} signed={signed}", response)

    check()
    assert not failures.found, f"{len(failures.found)} failures, e.g. {failures.found[:5]}"
