"""Shared fixtures: a fresh PostgreSQL database per test session, a fresh SQLite file
per test, and the ``store`` fixture that runs a test against both."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
import structlog
from hypothesis import settings as hypothesis_settings

import rota
from rota.config import Settings
from rota.store.port import Store
from rota.store.postgres import PostgresStore
from rota.store.sqlite import SqliteStore
from tests.helpers import WorkerProcesses

# pytester: tests of rota's pytest plugin (tests/testing) run pytest on a user's suite.
pytest_plugins = ("pytester",)

# Property tests: no per-example deadline (this 2-core machine is shared, and a slow
# example is not a failure), and in CI a fixed set of examples, so a run that passed
# here passes there; new examples are explored in local runs.
hypothesis_settings.register_profile("default", deadline=None)
hypothesis_settings.register_profile("ci", deadline=None, derandomize=True)
hypothesis_settings.load_profile("ci" if os.environ.get("CI") else "default")

ADMIN_URL = os.environ.get("ROTA_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")
REQUIRE_POSTGRES = os.environ.get("ROTA_REQUIRE_POSTGRES") == "1"
TABLES = (
    "rota_runs, rota_attempts, rota_run_logs, rota_jobs, rota_leases, rota_leader_terms,"
    " rota_limits, rota_workers, rota_api_keys, rota_audit_log, rota_workflow_runs,"
    " rota_workflows,"
    " rota_webhook_subscriptions, rota_webhook_deliveries, rota_rates, rota_rate_starts,"
    " rota_breaker_rules, rota_breakers, rota_breaker_transitions, rota_signed_out_sessions,"
    " rota_events, rota_event_subscriptions,"
    " rota_idempotency_keys, rota_api_rate_windows, rota_queues, rota_chart_minutes,"
    " rota_chart_hours, rota_chart_quarters, rota_chart_rollup"
)


def _with_database(url: str, name: str) -> str:
    base, _, _ = url.rpartition("/")
    return f"{base}/{name}"


@contextmanager
def fresh_database(prefix: str) -> Iterator[str]:
    """An empty PostgreSQL database of our own, dropped afterwards; without a server the
    test is skipped with a loud reason (fails, with ROTA_REQUIRE_POSTGRES=1)."""
    try:
        admin = psycopg.connect(ADMIN_URL, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as exc:
        message = f"PostgreSQL tests need a server at {ADMIN_URL} ({exc})".strip()
        if REQUIRE_POSTGRES:
            pytest.fail(f"ROTA_REQUIRE_POSTGRES=1 but {message}", pytrace=False)
        pytest.skip(f"SKIPPING POSTGRES TESTS: {message}")
    name = f"{prefix}_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield _with_database(ADMIN_URL, name)
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """A database of our own for this test session, dropped at the end."""
    with fresh_database("rota_test") as url:
        yield url


@pytest.fixture(scope="session")
def pg_migrated(pg_url: str) -> str:
    import asyncio

    async def migrate() -> None:
        store = PostgresStore(pg_url)
        await store.open()
        try:
            await store.migrate()
        finally:
            await store.close()

    asyncio.run(migrate())
    return pg_url


@pytest.fixture
def pg_clean(pg_migrated: str) -> str:
    """The session database, emptied for this test."""
    with psycopg.connect(pg_migrated, autocommit=True) as conn:
        conn.execute(f"TRUNCATE {TABLES} RESTART IDENTITY")
    return pg_migrated


@pytest.fixture
def marks(tmp_path: Path) -> Path:
    """A folder where worker processes started by a test write what they did."""
    folder = tmp_path / "marks"
    folder.mkdir()
    return folder


@pytest.fixture
def sqlite_url(tmp_path: os.PathLike[str]) -> str:
    return f"sqlite:///{os.fspath(tmp_path)}/rota.db"


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest) -> str:
    """A fresh, migrated database URL of each kind."""
    if request.param == "postgres":
        return str(request.getfixturevalue("pg_clean"))
    return str(request.getfixturevalue("sqlite_url"))


@pytest.fixture
def settings(db_url: str) -> Settings:
    return Settings(database_url=db_url, lease_seconds=2.0, reap_interval_seconds=0.2)


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[Store]:
    store: Store = SqliteStore(db_url) if db_url.startswith("sqlite") else PostgresStore(db_url)
    await store.open()
    await store.migrate()
    try:
        yield store
    finally:
        await store.close()


@pytest.fixture
def worker_processes(db_url: str, marks: Path) -> Iterator[WorkerProcesses]:
    """Start real worker processes on the test's database; all are killed at the end."""
    processes = WorkerProcesses(db_url, marks)
    try:
        yield processes
    finally:
        processes.stop_all()


@pytest.fixture
def process_app(db_url: str) -> Iterator[rota.App]:
    """An App on the test's database with the handlers worker processes run
    (tests/apps/proc_app.py), to enqueue runs for them and inspect what they did."""
    from tests.apps.proc_app import app as proc_app

    app = rota.App(db_url)
    app.registry = proc_app.registry
    try:
        yield app
    finally:
        app.close()


@pytest.fixture(autouse=True)
def _structlog_left_as_found() -> Iterator[None]:
    """A test that runs the CLI in this process (click's CliRunner) configures structlog
    as `rota` does, caching each logger on its first use; left so, every later test's
    loggers would be cached at that level, out of reach of structlog's capture_logs.
    The configuration a test found is put back after it."""
    found = structlog.get_config()
    yield
    if structlog.get_config() != found:
        structlog.configure(**found)
