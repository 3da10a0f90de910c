"""Migration numbers (ADR 0033). Shipped migrations keep their numbers: a database
records the versions it applied, so renumbering one would skip or repeat a step on
every database already migrated. Up to version 22 the dialects numbered alike only
until 18 (SQLite's 19 and 20 are PostgreSQL's 20 and 21); SQLite's 21 and 22 are steps
it does not need, with no statement (and its 27, the claim reading paused queues, which
only PostgreSQL keeps in a function). From version 22 on a number means the same step in
both dialects: the same name, and a file with no statement where one needs nothing."""

from __future__ import annotations

import pytest

from rota.store.queries import latest_version, load_migrations

DIALECTS = ("sqlite", "postgres")
ALIGNED_FROM = 22  # the first version that is the same step in both dialects
SHIPPED_DIFFERENTLY = {
    # version: (sqlite's name, postgres's name), as shipped; never to change
    19: ("two_homes", "state_index_without_held_runs"),
    20: ("breaker_namespaces", "two_homes"),
    21: ("state_index_without_held_runs", "breaker_namespaces"),
}
NO_STEP = {"sqlite": {21, 22, 27, 30, 32}, "postgres": set()}


def _has_statements(sql: str) -> bool:
    return any(line.strip() and not line.lstrip().startswith("--") for line in sql.splitlines())


def _names(dialect: str) -> dict[int, str]:
    return {m.version: m.name for m in load_migrations(dialect)}


def test_both_dialects_stand_at_the_same_version() -> None:
    assert latest_version("sqlite") == latest_version("postgres")


def test_a_number_names_the_same_step_in_both_dialects() -> None:
    sqlite, postgres = _names("sqlite"), _names("postgres")
    assert sqlite.keys() == postgres.keys()
    differing = {v: (sqlite[v], postgres[v]) for v in sqlite if sqlite[v] != postgres[v]}
    assert differing == SHIPPED_DIFFERENTLY
    assert all(v < ALIGNED_FROM for v in differing)


def test_both_dialects_take_the_same_steps() -> None:
    assert sorted(_names("sqlite").values()) == sorted(_names("postgres").values())


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_step_a_dialect_does_not_need_is_a_file_without_statements(dialect: str) -> None:
    empty = {m.version for m in load_migrations(dialect) if not _has_statements(m.sql)}
    assert empty == NO_STEP[dialect]
    for version in empty:
        [migration] = [m for m in load_migrations(dialect) if m.version == version]
        assert "no step" in migration.sql, "say why the dialect needs nothing"
