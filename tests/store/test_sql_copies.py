"""The webhook outbox is written by the completion and by the reaper, in SQL of each
dialect: the copies are pinned here, so a change to one that misses the other fails.
(The run-state -> event CASE in them is pinned to the domain table by
tests/contract/test_store_webhooks.py.)

On PostgreSQL the outbox is a CTE, the same word for word in both queries but for the
CTE it reads (``done``, ``reaped``). On SQLite it is a statement of its own, and the two
differ where the batch comes from (the completion's JSON items and their attempt rows,
the reaper's one run): what they share, the row written, the subscriptions matched and
the guard, is pinned. Across dialects, every statement that writes a run's event
(those two, and the one-state writers: a fail-fast, a cancel, a skip) matches
subscriptions by the same rule. And a bulk action's count filters runs exactly as the
run search does."""

from __future__ import annotations

import re

import pytest

from rota.store.queries import load_queries
from rota.store.sqlite.codec import statements

# Every statement that writes a run's event (tests/contract/test_store_webhooks.py
# fails on one that is not listed there; list it here too).
RUN_EVENT_WRITERS = (
    "complete",
    "complete_judging",
    "reap",
    "breaker_fail_fast",
    "release",
    "cancel_waiting",
    "expire_deadlines",
    "cancel_workflow_run",
    "overlap_skip",
    "settle_step",
)


def _plain(sql: str) -> str:
    """Without comments, whitespace collapsed."""
    without = "\n".join(line.split("--", 1)[0] for line in sql.splitlines())
    return " ".join(without.split())


def _postgres_outbox(query: str) -> str:
    plain = _plain(load_queries("postgres")[query])
    [cte] = re.findall(
        r"events AS \( (INSERT INTO rota_webhook_deliveries .*?) \), recorded AS", plain
    )
    return str(cte)


def _sqlite_outbox(query: str) -> str:
    [statement] = [
        s
        for s in statements(load_queries("sqlite")[query] + ";")
        if s.startswith("INSERT INTO rota_webhook_deliveries")
    ]
    return _plain(statement)


def test_postgres_outbox_cte_is_the_same_in_complete_and_reap() -> None:
    complete = _postgres_outbox("complete").replace("FROM done) d", "FROM <source>) d")
    reap = _postgres_outbox("reap").replace("FROM reaped) d", "FROM <source>) d")
    assert "<source>" in complete
    assert complete == reap


def test_sqlite_outbox_statements_share_the_row_the_match_and_the_guard() -> None:
    complete, reap = _sqlite_outbox("complete"), _sqlite_outbox("reap")

    def row(sql: str) -> str:  # the INSERT's columns and the SELECT list
        return sql.split(" FROM ", 1)[0]

    def match(sql: str) -> str:  # the subscriptions joined
        [found] = re.findall(r"JOIN rota_webhook_subscriptions s ON .*? WHERE ", sql)
        return str(found)

    guard = "AND EXISTS (SELECT 1 FROM rota_webhook_subscriptions WHERE enabled);"
    assert row(complete) == row(reap)
    assert match(complete) == match(reap)
    assert complete.endswith(guard)
    assert reap.endswith(guard)


def _normalised(dialect: str, query: str) -> str:
    """The query with the run's alias as ``run`` and LIKE's percent unescaped."""
    sql = _plain(load_queries(dialect)[query]).replace("%%", "%")
    return re.sub(r"\b[dfr]\.(namespace|handler|queue)\b", r"run.\1", sql)


@pytest.mark.parametrize("dialect", ["sqlite", "postgres"])
@pytest.mark.parametrize("query", RUN_EVENT_WRITERS)
def test_every_run_event_writer_matches_subscriptions_by_one_rule(dialect: str, query: str) -> None:
    sql = _normalised(dialect, query)
    for condition in (
        "s.enabled",
        "s.namespace = run.namespace",
        "(s.handler IS NULL OR s.handler = run.handler)",
        "(s.queue IS NULL OR s.queue = run.queue)",
    ):
        assert condition in sql, f"{dialect} {query}: {condition}"
    assert re.search(
        r"s\.event_types LIKE (?:'%,' \|\| \w\.event_type \|\| ',%'|'%,run\.[a-z_.]+,%')", sql
    ), f"{dialect} {query}: the event type's match"


def _filter(dialect: str, query: str) -> str:
    """A query's WHERE clause, up to its ORDER BY (if any)."""
    plain = _plain(load_queries(dialect)[query]).rstrip(";")
    return plain.split(" WHERE ", 1)[1].split(" ORDER BY ", 1)[0]


@pytest.mark.parametrize("dialect", ["sqlite", "postgres"])
def test_the_bulk_count_filters_as_the_search_does(dialect: str) -> None:
    search = _filter(dialect, "search_runs")
    keyset = re.search(r" AND \(\S*before_id\S* IS NULL OR r\.id < \S*before_id\S*\)$", search)
    assert keyset, search
    assert _filter(dialect, "count_matching_runs") == search[: keyset.start()]
