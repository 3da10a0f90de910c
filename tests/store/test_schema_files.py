"""The committed schema files (src/rota/store/schema/<dialect>.sql) are what the
migrations make: a fresh database of each dialect, migrated and dumped, matches its
file. After a migration, ``make schema`` rewrites them."""

from __future__ import annotations

import asyncio
import difflib
import re
from pathlib import Path

import pytest

from rota.store.schema_dump import (
    DIALECTS,
    committed_path,
    dump_postgres,
    dump_sqlite,
    migrate_database,
)
from tests.conftest import fresh_database

pytestmark = [pytest.mark.timeout(120)]


def _assert_same(dialect: str, dumped: str) -> None:
    committed = committed_path(dialect).read_text()
    if dumped != committed:
        diff = "".join(
            difflib.unified_diff(
                committed.splitlines(keepends=True),
                dumped.splitlines(keepends=True),
                f"committed {dialect}.sql",
                "migrated",
                n=1,
            )
        )
        pytest.fail(f"{dialect}.sql is not what the migrations make; run `make schema`\n{diff}")


def test_sqlite_schema_file_is_what_the_migrations_make(tmp_path: Path) -> None:
    path = tmp_path / "schema.db"
    asyncio.run(migrate_database("sqlite", f"sqlite:///{path}"))
    _assert_same("sqlite", dump_sqlite(str(path)))


@pytest.mark.postgres
def test_postgres_schema_file_is_what_the_migrations_make() -> None:
    with fresh_database("rota_schema") as url:
        asyncio.run(migrate_database("postgres", url))
        _assert_same("postgres", dump_postgres(url))


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_reader_finds_rota_runs_in_one_place(dialect: str) -> None:
    """A table on PostgreSQL (partitioned by state), a view over the two homes on SQLite."""
    text = committed_path(dialect).read_text()
    assert len(re.findall(r"^CREATE (?:TABLE|VIEW) rota_runs\b(?!_)", text, re.MULTILINE)) == 1
