"""The dashboard in a real browser (Debian's chromium, driven by Playwright) against a
real `rota server` process with its embedded worker, on SQLite and on PostgreSQL: what
an operator does at 3 a.m., and an accessibility check of every page (axe-core)."""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, BrowserContext, Page, expect, sync_playwright

from tests.conftest import ADMIN_URL, REQUIRE_POSTGRES
from tests.helpers import wait_until

from .browser import CHROMIUM, CHROMIUM_ARGS, Server, rota_server

pytestmark = pytest.mark.slow
VIEWER = ("jobs:read",)
TIMEOUT_MS = 15_000
expect.set_options(timeout=TIMEOUT_MS)
PAGES = (
    "/",
    "/runs",
    "/dlq",
    "/jobs",
    "/workflows",
    "/workers",
    "/limits",
    "/leader",
    "/breakers",
    "/queues",
    "/charts",
    "/charts?range=7d&by=handler",
    "/signin",
)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: `apt-get install -y chromium` (make test does it)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
        )
        yield launched
        launched.close()


def _postgres_database() -> Iterator[str]:
    try:
        admin = psycopg.connect(ADMIN_URL, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as exc:
        if REQUIRE_POSTGRES:
            pytest.fail(f"ROTA_REQUIRE_POSTGRES=1 but PostgreSQL is unreachable ({exc})")
        pytest.skip(f"SKIPPING POSTGRES TESTS: {exc}")
    name = f"rota_dash_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield f"{ADMIN_URL.rpartition('/')[0]}/{name}"
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    """One server per database kind for this module (tests use their own jobs and runs)."""
    folder = tmp_path_factory.mktemp(f"dash-{request.param}")
    if request.param == "sqlite":
        with rota_server(f"sqlite:///{folder}/rota.db", folder / "server.log") as running:
            yield running
        return
    databases = _postgres_database()
    url = next(databases)
    try:
        with rota_server(url, folder / "server.log") as running:
            yield running
    finally:
        databases.close()


@pytest.fixture
def context(browser: Browser, server: Server) -> Iterator[BrowserContext]:
    made = browser.new_context(base_url=server.url, viewport={"width": 1280, "height": 800})
    made.set_default_timeout(TIMEOUT_MS)
    yield made
    made.close()


def sign_in(context: BrowserContext, server: Server, scopes: tuple[str, ...] | None = None) -> Page:
    page = context.new_page()
    page.goto("/runs")
    expect(page).to_have_url(re.compile(r"/signin\?next="))
    page.get_by_label("Token or API key").fill(server.token(scopes) if scopes else server.token())
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Runs", exact=True)).to_be_visible()
    return page


def _name() -> str:
    return f"job-{uuid.uuid4().hex[:8]}"


def test_sign_in_watch_a_run_appear_and_finish_then_sign_out(
    context: BrowserContext, server: Server
) -> None:
    page = sign_in(context, server)
    page.evaluate("window.__notReloaded = true")
    run_id = server.enqueue("quick", _name())
    link = page.get_by_role("link", name=f"#{run_id}", exact=True)
    row = page.get_by_role("row").filter(has=link)
    expect(row).to_be_visible()
    expect(row).to_contain_text("succeeded")
    assert page.evaluate("window.__notReloaded") is True  # live, not reloaded
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    page.goto("/runs")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()


def test_a_failing_run_shows_its_error_and_attempts_and_replays(
    context: BrowserContext, server: Server
) -> None:
    page = sign_in(context, server)
    run_id = server.enqueue("boom", _name())
    wait_until(lambda: server.run_state(run_id) == "dead_lettered", what="the run to die")
    page.goto(f"/runs/{run_id}")
    expect(page.get_by_text("upstream refused the export (attempt 2)").first).to_be_visible()
    expect(page.get_by_text("Attempt 1", exact=False).first).to_be_visible()
    expect(page.get_by_text("Attempt 2", exact=False).first).to_be_visible()
    page.goto("/dlq")
    page.get_by_role("button", name=f"Replay run {run_id}").click()
    expect(page.get_by_text("Replayed as a new run.")).to_be_visible()
    expect(page.get_by_role("link", name=f"run #{run_id}")).to_be_visible()


def test_cancel_a_long_run(context: BrowserContext, server: Server) -> None:
    page = sign_in(context, server)
    run_id = server.enqueue("long", _name())
    page.goto(f"/runs/{run_id}")
    # Claimed, then running once the worker's heartbeat confirms it: live, no reload.
    expect(page.locator(".facts")).to_contain_text(re.compile(r"claimed|running"))
    page.get_by_role("button", name="Cancel run").click()
    expect(page.get_by_text("Cancel requested.")).to_be_visible()
    expect(page.locator(".facts")).to_contain_text("cancelled")  # live again
    assert server.run_state(run_id) == "cancelled"
    expect(page.locator("#logs")).to_contain_text("stopping: cancelled")


def test_a_running_attempts_log_tails_live(context: BrowserContext, server: Server) -> None:
    # "long" logs a line every 0.2 s until cancelled: lines logged after the page was
    # drawn must appear on it while the run is still running, without a reload.
    page = sign_in(context, server)
    run_id = server.enqueue("long", _name())
    wait_until(
        lambda: any(x["message"] == "step" for x in server.logs(run_id)),
        what="the run's first live log line",
    )
    page.goto(f"/runs/{run_id}")
    page.evaluate("window.__notReloaded = true")
    shown = max(
        int(step) for step in re.findall(r'"step": (\d+)', page.locator("#logs").inner_text())
    )
    expect(page.locator("#logs")).to_contain_text(f'"step": {shown + 5}')
    assert server.run_state(run_id) in ("claimed", "running")  # not ended: tailed
    assert page.evaluate("window.__notReloaded") is True
    page.get_by_role("button", name="Cancel run").click()
    expect(page.locator(".facts")).to_contain_text("cancelled")
    expect(page.locator("#logs")).to_contain_text("stopping: cancelled")
    text = page.locator("#logs").inner_text()
    steps = [int(step) for step in re.findall(r'"step": (\d+)', text)]
    assert steps == list(range(len(steps))), "each line once, in order"


def test_a_workflow_runs_graph_changes_live(context: BrowserContext, server: Server) -> None:
    page = sign_in(context, server)
    workflow_run_id = server.start_workflow("nightly-etl", {"extract_seconds": 4})
    page.goto("/workflows")
    row = page.get_by_role("row").filter(has=page.get_by_role("link", name=f"#{workflow_run_id}"))
    expect(row).to_contain_text("nightly-etl")
    row.get_by_role("link", name=f"#{workflow_run_id}").click()
    expect(page.get_by_role("heading", name=f"Workflow run #{workflow_run_id}")).to_be_visible()
    page.evaluate("window.__notReloaded = true")
    # The first step is still at work, the last waits: the graph says so in words.
    expect(
        page.get_by_role("link", name=re.compile(r"^Step extract: (pending|claimed|running)"))
    ).to_be_visible()
    expect(page.get_by_role("link", name=re.compile(r"^Step load: waiting"))).to_be_visible()
    # Then every step succeeds, on the open page, without a reload.
    expect(page.get_by_role("link", name=re.compile(r"^Step load: succeeded"))).to_be_visible()
    expect(page.locator(".facts")).to_contain_text("succeeded")
    assert page.evaluate("window.__notReloaded") is True
    # A step's node is a link to its run, reached with the keyboard.
    page.get_by_role("link", name=re.compile(r"^Step load: succeeded")).focus()
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/runs/\d+$"))
    expect(page.get_by_role("heading", name=re.compile(r"Run #\d+ wf-load"))).to_be_visible()


def test_bulk_cancel_every_run_the_filter_matches(context: BrowserContext, server: Server) -> None:
    queue = _name()
    for n in range(3):  # due in 2099: they stay pending while the test looks
        body = {"handler": "quick", "payload": n, "run_at": "2099-01-01T00:00:00Z", "queue": queue}
        assert server.api("POST", "/api/v1/runs", json=body).status_code == 201
    page = sign_in(context, server)
    page.goto(f"/runs?queue={queue}")
    page.get_by_label("Every run this filter matches:").select_option("cancel")
    page.get_by_role("button", name="Count them…").click()
    expect(page.locator("#bulk-count")).to_contain_text("3 run(s) match now.")
    page.get_by_role("button", name="Cancel 3 run(s)").click()
    expect(page.get_by_text("The bulk action changed 3 run(s).")).to_be_visible()
    listed = server.api("GET", f"/api/v1/runs?queue={queue}").json()["items"]
    assert {run["state"] for run in listed} == {"cancelled"}


def test_drain_and_resume_a_worker(context: BrowserContext, server: Server) -> None:
    page = sign_in(context, server)
    page.goto("/workers")
    row = page.get_by_role("row").filter(has_text=server.node_id)
    expect(row).to_contain_text("active")
    row.get_by_role("button", name=f"Drain {server.node_id}").click()
    expect(page.get_by_text("Worker draining")).to_be_visible()
    expect(row).to_contain_text("draining")
    row.get_by_role("button", name=f"Resume {server.node_id}").click()
    expect(page.get_by_text("Worker resumed")).to_be_visible()
    expect(row).to_contain_text("active")


def test_pause_and_resume_a_queue(context: BrowserContext, server: Server) -> None:
    page = sign_in(context, server)
    page.goto("/queues")
    row = page.get_by_role("row").filter(has_text="default")
    expect(row).to_contain_text("active")
    row.get_by_role("button", name="Pause queue default").click()
    expect(page.get_by_text("Queue paused")).to_be_visible()
    expect(row).to_contain_text("paused")
    page.goto("/")
    expect(page.get_by_text("Paused (claims skip them)")).to_be_visible()
    page.goto("/queues")
    row.get_by_role("button", name="Resume queue default").click()
    expect(page.get_by_text("Queue resumed")).to_be_visible()
    expect(row).to_contain_text("active")


def test_pausing_a_schedule_hides_its_next_fires(context: BrowserContext, server: Server) -> None:
    name = _name()
    created = server.api(
        "POST",
        "/api/v1/jobs",
        json={"name": name, "handler": "quick", "cron": "30 1 * * *", "timezone": "Europe/London"},
    )
    assert created.status_code == 201, created.text
    page = sign_in(context, server)
    page.goto(f"/jobs/default/{name}")
    fires = page.locator("#next-fires tbody tr")
    expect(fires).to_have_count(10)
    expect(page.locator("#next-fires")).to_contain_text("In Europe/London")
    page.get_by_role("button", name="Pause schedule").click()
    expect(page.get_by_text("Schedule paused")).to_be_visible()
    expect(fires).to_have_count(0)
    expect(page.locator("#next-fires")).to_contain_text("None while paused.")
    page.get_by_role("button", name="Resume schedule").click()
    expect(fires).to_have_count(10)


def test_a_viewer_sees_no_buttons_and_forged_posts_are_refused(
    context: BrowserContext, server: Server
) -> None:
    run_id = server.enqueue("long", _name())
    page = sign_in(context, server, VIEWER)
    for path in (f"/runs/{run_id}", "/runs", "/dlq", "/workers", "/limits", "/queues"):
        page.goto(path)
        names = [b.inner_text() for b in page.get_by_role("button").all()]
        assert set(names) <= {"Sign out", "Filter"}, (path, names)
    page.goto(f"/runs/{run_id}")
    csrf = page.locator("input[name=csrf]").first.get_attribute("value")
    forged = page.request.post(f"/runs/{run_id}/cancel", form={"csrf": csrf or ""})
    assert forged.status == 403
    assert "this needs scope jobs:trigger" in forged.text()
    no_token = page.request.post(f"/runs/{run_id}/cancel", form={})
    assert no_token.status == 403
    assert "CSRF" in no_token.text()
    assert server.run_state(run_id) in ("pending", "claimed", "running")
    server.api("POST", f"/api/v1/runs/{run_id}/cancel")


def test_an_admin_post_without_the_csrf_token_is_refused(
    context: BrowserContext, server: Server
) -> None:
    run_id = server.enqueue("long", _name())
    page = sign_in(context, server)
    answer = page.request.post(f"/runs/{run_id}/cancel", form={"csrf": "forged"})
    assert answer.status == 403
    assert "CSRF" in answer.text()
    assert server.run_state(run_id) in ("pending", "claimed", "running")
    server.api("POST", f"/api/v1/runs/{run_id}/cancel")


def _serious(results: Any) -> list[str]:
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:3]}"
        for v in results.response["violations"]
        if v.get("impact") in ("serious", "critical")
    ]


def _drawn(page: Page) -> bool:
    page.reload()
    return page.locator("#h-throughput").count() == 1


def test_every_page_passes_axe(context: BrowserContext, server: Server) -> None:
    run_id = server.enqueue("boom", _name())
    name = _name()
    server.api("POST", "/api/v1/jobs", json={"name": name, "handler": "quick", "cron": "0 * * * *"})
    wait_until(lambda: server.run_state(run_id) == "dead_lettered", what="the run to die")
    anonymous = context.new_page()
    anonymous.goto("/signin")
    axe = Axe()
    problems = {"/signin": _serious(axe.run(anonymous))}
    page = sign_in(context, server)
    workflow_run_id = server.start_workflow("nightly-etl", {"extract_seconds": 0})
    for path in (
        *PAGES[:-1],
        f"/runs/{run_id}",
        f"/jobs/default/{name}",
        "/runs/999999999",
        f"/workflows/{workflow_run_id}",
        "/runs/bulk-action?action=replay&state=dead_lettered",
    ):
        page.goto(path)
        if path.startswith("/charts"):  # drawn once the leader has counted (its first turn)
            wait_until(lambda: _drawn(page), what="the charts to be drawn")
        problems[path] = _serious(axe.run(page))
    assert {path: found for path, found in problems.items() if found} == {}


def test_usable_on_a_phone(browser: Browser, server: Server) -> None:
    phone = browser.new_context(base_url=server.url, viewport={"width": 390, "height": 844})
    try:
        page = sign_in(phone, server)
        wide = {}
        for path in PAGES[:-1]:  # wide tables scroll inside themselves, not the page
            page.goto(path)
            wide[path] = page.evaluate("document.documentElement.scrollWidth")
        assert {path: px for path, px in wide.items() if px > 390} == {}
    finally:
        phone.close()


def test_an_open_page_does_not_hold_up_a_stopping_server(tmp_path: Path) -> None:
    """uvicorn waits for open responses when it stops; the event stream is ended first,
    so the stop does not run into the graceful-shutdown timeout."""
    log = tmp_path / "server.log"
    with rota_server(f"sqlite:///{tmp_path}/rota.db", log) as server:
        session = httpx.Client(base_url=server.url, timeout=30)
        page = session.get("/signin")
        signin = re.search(r'name="signin_token" value="([^"]+)"', page.text)
        assert signin is not None
        session.post(
            "/signin",
            data={"credential": server.token(), "signin_token": signin.group(1), "next": "/"},
        )
        stream = session.stream("GET", "/events")
        answer = stream.__enter__()
        assert answer.status_code == 200
    # rota_server has stopped the process (SIGTERM, then waited); the stream ended.
    text = log.read_text()
    assert "Application shutdown complete" in text
    assert "timeout graceful shutdown exceeded" not in text
    stream.__exit__(None, None, None)
    session.close()


def test_keyboard_only(context: BrowserContext, server: Server) -> None:
    """The first Tab reaches the skip link, and its target is the page's content; the
    sign-in form is usable without a mouse."""
    page = context.new_page()
    page.goto("/signin")
    page.keyboard.press("Tab")
    skip = page.get_by_role("link", name="Skip to content")
    expect(skip).to_be_focused()
    page.keyboard.press("Enter")  # past the header, into the content
    page.keyboard.press("Tab")
    expect(page.get_by_label("Token or API key")).to_be_focused()
    page.keyboard.type(server.token())
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
