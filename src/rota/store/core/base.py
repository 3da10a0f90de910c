"""What every part of the one SQL store shares: the dialect, and enqueueing (which the
planner's writes and the optional caller-connection port reuse)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from rota.domain.labels import labels_json
from rota.domain.runs import Enqueued, NewRun, unkeyed
from rota.store.dialect import Dialect, Row, Session

# Below this, one INSERT of arrays (or a loop on SQLite) is cheaper than COPY's setup.
COPY_THRESHOLD = 200


def run_item(run: NewRun) -> dict[str, Any]:
    """A new run as the parameters of one ``insert_runs`` item."""
    return {
        "namespace": run.namespace,
        "handler": run.handler,
        "queue": run.queue,
        "payload": run.payload_json,
        "priority": run.priority,
        "run_at": run.run_at,
        "max_attempts": run.max_attempts,
        "timeout_seconds": run.timeout,
        "idempotency_key": run.idempotency_key,
        "replay_of": run.replay_of,
        "job_id": run.job_id,
        "slot_at": run.slot_at,
        "tags": sorted(run.tags) or None,
        "concurrency_key": run.concurrency_key,
        "concurrency_limit": run.concurrency_limit,
        "deadline": run.deadline,
        "correlation_id": run.correlation_id,
        "trace_context": run.trace_context,
        "rate_key": run.rate_key,
        "breaker_key": run.breaker_key,
        "owner": run.owner,
        "labels": labels_json(run.labels),
    }


def _key_of(row: Row) -> tuple[str, str, str]:
    return (row["namespace"], row["handler"], row["idempotency_key"])


def enqueued_in_order(
    runs: Sequence[NewRun], inserted: Sequence[Row], existing: Sequence[Row]
) -> list[Enqueued]:
    """Map the rows ``insert_runs`` created (and, for keys that matched an existing
    run, ``existing``) back to the runs asked for, in their order.

    A key is unique only within its namespace and handler, and may repeat within one
    batch (ON CONFLICT then keeps the first). Unkeyed rows never conflict and come back
    in input order because ids are drawn from one sequence in insertion order."""
    by_key = {_key_of(row): row["id"] for row in inserted if row["idempotency_key"] is not None}
    unkeyed = iter(sorted(row["id"] for row in inserted if row["idempotency_key"] is None))
    found = {_key_of(row): row["id"] for row in existing}
    results: list[Enqueued] = []
    for run in runs:
        if run.idempotency_key is None:
            results.append(Enqueued(next(unkeyed), created=True))
            continue
        key = (run.namespace, run.handler, run.idempotency_key)
        if key in by_key:
            # The first run with this key created it; later ones in the batch match it.
            found[key] = by_key.pop(key)
            results.append(Enqueued(found[key], created=True))
        else:
            results.append(Enqueued(found[key], created=False))
    return results


async def insert_runs(
    session: Session, runs: Sequence[NewRun], aging_seconds: float, copy: bool
) -> list[Enqueued]:
    """Enqueue on ``session``, inside whatever transaction it has open; large unkeyed
    batches go by COPY where the dialect has it."""
    if not runs:
        return []
    if copy and len(runs) >= COPY_THRESHOLD and unkeyed(runs):
        ids = await session.copy_runs(runs, aging_seconds)
        return list(map(Enqueued._make, zip(ids, itertools.repeat(True))))
    items = [run_item(run) for run in runs]
    inserted = await session.batch("insert_runs", items, {"aging_seconds": aging_seconds})
    if len(inserted) == len(runs) == 1:
        return [Enqueued(inserted[0]["id"], created=True)]
    keys = missing_keys(runs, inserted)
    existing = await session.rows("existing_by_idempotency_key", {"keys": keys}) if keys else []
    return enqueued_in_order(runs, inserted, existing)


def missing_keys(runs: Sequence[NewRun], inserted: Sequence[Row]) -> list[str]:
    """The idempotency keys of runs that matched an existing run instead of creating one."""
    created = {_key_of(row) for row in inserted}
    return sorted(
        {
            run.idempotency_key
            for run in runs
            if run.idempotency_key is not None
            and (run.namespace, run.handler, run.idempotency_key) not in created
        }
    )


class CoreBase:
    _d: Dialect
    aging_seconds: float
    map_max_items: int

    async def _insert_runs(self, session: Session, runs: Sequence[NewRun]) -> list[Enqueued]:
        return await insert_runs(session, runs, self.aging_seconds, self._d.supports_copy)

    async def _term_holds(self, session: Session, leader_term: int | None) -> bool:
        """A leader duty writes only while its term is current (the fencing token)."""
        if leader_term is None:
            return True
        return bool(await session.rows("leader_term_holds", {"term": leader_term}))

    async def _prune(
        self, query: str, older_than: datetime, limit: int, leader_term: int | None
    ) -> int:
        """Run a pruning ``query`` (params ``older_than``, ``limit``; one returned row
        per deleted one) as a leader duty: nothing while ``leader_term`` is stale."""

        async def prune(session: Session) -> int:
            if not await self._term_holds(session, leader_term):
                return 0
            params = {"older_than": older_than, "limit": limit}
            return len(await session.rows(query, params))

        return await self._d.in_transaction(None, prune)
