"""Schema: migrations apply once, and a database newer than the code is refused."""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import psycopg
import pytest

from rota.bootstrap import open_store
from rota.config import Settings
from rota.errors import SchemaMismatch
from rota.store.port import Store
from rota.store.postgres import PostgresStore
from rota.store.queries import latest_version
from rota.store.sqlite import SqliteStore, path_from_url

from .support import bounded

FUTURE_VERSION = 999


@pytest.fixture(params=["sqlite", "postgres"])
def empty_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database that has never been migrated."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/empty.db"
        return
    pg_url = str(request.getfixturevalue("pg_url"))
    name = f"rota_empty_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield f"{pg_url.rpartition('/')[0]}/{name}"
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _store(url: str) -> Store:
    return SqliteStore(url) if url.startswith("sqlite") else PostgresStore(url)


@pytest.fixture
async def empty_store(empty_url: str) -> AsyncIterator[Store]:
    store = _store(empty_url)
    await store.open()
    try:
        yield store
    finally:
        await store.close()


def _execute(url: str, sql: str) -> None:
    """Change the schema table behind the store's back, as another rota version would."""
    if url.startswith("sqlite"):
        with sqlite3.connect(path_from_url(url)) as conn:
            conn.execute(sql)
        conn.close()
    else:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql)


async def test_schema_is_up_to_date_after_migrate(store: Store) -> None:
    status = await store.schema_status()
    assert status.current == status.latest == latest_version(store.dialect)
    assert status.up_to_date
    assert await store.migrate() == []


async def test_migrate_applies_every_version_once(empty_store: Store) -> None:
    latest = latest_version(empty_store.dialect)
    before = await empty_store.schema_status()
    assert (before.current, before.latest, before.up_to_date) == (0, latest, False)
    assert await empty_store.migrate() == list(range(1, latest + 1))
    assert await empty_store.migrate() == []
    after = await empty_store.schema_status()
    assert (after.current, after.up_to_date) == (latest, True)


async def test_concurrent_migrations_apply_each_version_once(empty_url: str) -> None:
    stores = [_store(empty_url) for _ in range(3)]
    try:
        for store in stores:
            await store.open()
        applied = await bounded(asyncio.gather(*(store.migrate() for store in stores)))
    finally:
        await asyncio.gather(*(store.close() for store in stores))
    latest = latest_version(stores[0].dialect)
    assert sorted(v for versions in applied for v in versions) == list(range(1, latest + 1))


async def test_processes_opening_one_empty_database_at_once_all_start(empty_url: str) -> None:
    """A web service and its worker started together on a fresh database (the FastAPI
    example): each reads the schema's version and migrates; none may fail on the other's
    CREATE (PostgreSQL refused a second CREATE TABLE IF NOT EXISTS of the version table
    made outside the migration lock: a duplicate key in pg_type)."""
    opened = await bounded(
        asyncio.gather(
            *(open_store(Settings(database_url=empty_url)) for _ in range(4)),
            return_exceptions=True,
        )
    )
    failed = [repr(s) for s in opened if isinstance(s, BaseException)]
    for store in opened:
        if not isinstance(store, BaseException):
            await store.close()
    assert failed == []


async def test_reading_the_version_of_an_empty_postgres_database_creates_nothing(
    empty_url: str,
) -> None:
    if empty_url.startswith("sqlite"):
        pytest.skip("SQLite's writer lock makes the version table's CREATE safe anywhere")
    store = _store(empty_url)
    await store.open()
    try:
        assert (await store.schema_status()).current == 0
    finally:
        await store.close()
    with psycopg.connect(empty_url, autocommit=True) as conn:
        row = conn.execute("SELECT to_regclass('rota_schema_migrations')").fetchone()
    assert row == (None,)


async def test_open_store_migrates_an_empty_database(empty_url: str) -> None:
    store = await open_store(Settings(database_url=empty_url))
    try:
        assert (await store.schema_status()).up_to_date
    finally:
        await store.close()


async def test_open_store_without_auto_migrate_refuses_an_old_schema(empty_url: str) -> None:
    with pytest.raises(SchemaMismatch) as caught:
        await open_store(Settings(database_url=empty_url, auto_migrate=False))
    assert caught.value.found == 0
    assert "rota db upgrade" in str(caught.value)


async def test_open_store_refuses_a_database_newer_than_the_code(store: Store, db_url: str) -> None:
    latest = latest_version(store.dialect)
    _execute(
        db_url,
        "INSERT INTO rota_schema_migrations (version, name) "
        f"VALUES ({FUTURE_VERSION}, 'from_the_future')",
    )
    try:
        status = await store.schema_status()
        assert (status.current, status.up_to_date) == (FUTURE_VERSION, False)
        with pytest.raises(SchemaMismatch) as caught:
            await open_store(Settings(database_url=db_url))
        assert (caught.value.found, caught.value.known) == (FUTURE_VERSION, latest)
        message = str(caught.value)
        assert f"version {FUTURE_VERSION}" in message
        assert "newer than this rota" in message
        # Nothing was migrated or rolled back by the refusal.
        assert (await store.schema_status()).current == FUTURE_VERSION
    finally:
        # The PostgreSQL database lives for the whole session: leave it as we found it.
        _execute(db_url, f"DELETE FROM rota_schema_migrations WHERE version = {FUTURE_VERSION}")
