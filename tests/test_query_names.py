"""Both dialects name their queries alike (store/queries.py promises it), so the two
adapters read side by side. The names not shared yet are listed below; a new query
that exists in one dialect only fails this test."""

from __future__ import annotations

from rota.store.queries import load_queries

# The queries that still differ because the two adapters do the same work in different
# steps (SQLite: a select, then per-row writes under BEGIN IMMEDIATE; PostgreSQL: one
# statement, SKIP LOCKED, an advisory lock, COPY). They go when one SqlStore runs both
# dialects over one name set: issue 10, item 1. Shrink this list; never grow it.
NOT_YET_SHARED: dict[str, frozenset[str]] = {
    "sqlite": frozenset(
        {
            "anything_due",
            "claim_candidates",
            "end_leases_of",
            "expired_leases",
            "leader_term_holds",
            "mark_dead",
            "prunable",
            "prune_attempts",
            "prune_logs",
            "prune_runs",
            "reap",
            "record_attempt",
            "silent_workers",
        }
    ),
    "postgres": frozenset(
        {
            "claim_ids",
            "claim_lock",
            "copy_runs",
            "has_keyed_work",
            "mark_dead_workers",
            "next_due_in",
            "prune_finished",
            "reap_expired",
            "reserve_ids",
        }
    ),
}


def only_in(dialect: str, other: str) -> set[str]:
    return set(load_queries(dialect)) - set(load_queries(other))


def test_sqlite_and_postgres_share_their_query_names() -> None:
    assert only_in("sqlite", "postgres") == NOT_YET_SHARED["sqlite"]
    assert only_in("postgres", "sqlite") == NOT_YET_SHARED["postgres"]
