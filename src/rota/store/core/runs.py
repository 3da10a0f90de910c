"""The one SQL store: producing runs, the worker's fenced writes, and the reaper."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from rota.domain.breakers import Breaker, Transition
from rota.domain.runs import (
    Enqueued,
    Lease,
    LogLine,
    NewRun,
    Outcome,
    ReapedRun,
    RenewResult,
    Run,
    replay_request,
)
from rota.domain.settle import CANCELLED_WAITING, RELEASED_ATTEMPT, reap_verdict
from rota.domain.states import RunState
from rota.errors import InvalidTransition, RunNotFound
from rota.store.core.breakers import CoreBreakers, record_outcomes, rules_of
from rota.store.core.workflows import CoreWorkflows, release_after
from rota.store.dialect import OneShot, Row, Session


def _in_lock_order(items: Sequence[Any]) -> list[Any]:
    """Multi-row writes (renew, complete, release) lock their rows in id order: two of
    them on overlapping runs (a heartbeat and a completion of the same worker) then wait
    for each other instead of deadlocking."""
    return sorted(items, key=lambda item: item.run_id)


def _lease_items(leases: Sequence[Lease | Outcome]) -> list[dict[str, Any]]:
    return [{"id": lease.run_id, "fence": lease.fence} for lease in _in_lock_order(leases)]


async def _write_outcomes(
    session: Session, outcomes: Sequence[Outcome], judge_breakers: bool
) -> list[Row]:
    """The ``complete`` statement: outcomes whose fence still holds are written; with
    ``judge_breakers``, not those a circuit breaker must judge (it leaves them for
    :func:`_judged_in`). The rows written: id, handler, breaker_key."""
    items = [
        {
            "id": o.run_id,
            "fence": o.fence,
            "state": o.state.value,
            "outcome": o.attempt_outcome.value,
            "result": o.result_json,
            "error": o.error,
            "retry_delay": o.retry_delay,
        }
        for o in _in_lock_order(outcomes)
    ]
    query = "complete_judging" if judge_breakers else "complete"
    return [row for row in await session.batch(query, items) if row["id"] is not None]


def _left(outcomes: Sequence[Outcome], written: Sequence[Row]) -> list[Outcome]:
    ids = {row["id"] for row in written}
    return [o for o in outcomes if o.run_id not in ids]


async def _judged_in(
    session: Session,
    outcomes: Sequence[Outcome],
    rules: Mapping[str, Breaker],
    moved: list[Transition] | None,
) -> list[Row]:
    """Write outcomes a breaker judges and move their breakers, on ``session`` (inside
    a transaction: a crash loses both or neither)."""
    written = await _write_outcomes(session, outcomes, judge_breakers=False)
    transitions = await record_outcomes(session, written, outcomes, rules)
    if moved is not None:
        moved.extend(transitions)
    return written


async def complete_in(
    session: Session,
    outcomes: Sequence[Outcome],
    rules: Mapping[str, Breaker] | None = None,
    moved: list[Transition] | None = None,
    release: bool = True,
    *,
    map_max_items: int,
) -> set[int]:
    """Record outcomes whose fence still holds, on ``session`` (inside a transaction);
    the run ids written. A handler's transaction commits its writes and its outcome this
    way. With breaker ``rules`` (None: read them here), the breakers move on the same
    session; a workflow step's children are released (or skipped) in the same
    transaction."""
    if rules is None:
        rules = rules_of(await session.rows("breaker_rules"))
    written = await _write_outcomes(session, outcomes, judge_breakers=bool(rules))
    if rules and (left := _left(outcomes, written)):
        written += await _judged_in(session, left, rules, moved)
    ids = {row["id"] for row in written}
    if release:
        await release_after(session, ids, map_max_items)
    return ids


class CoreRuns(CoreWorkflows, CoreBreakers):
    # -- producing --------------------------------------------------------------
    async def enqueue(self, runs: Sequence[NewRun], now: datetime | None) -> list[Enqueued]:
        enqueued = await self._insert_runs(OneShot(self._d, now), runs)
        self._d.runs_committed()
        return enqueued

    async def replay(self, run_id: int, now: datetime | None) -> int:
        step = await self.workflow_step_of(run_id)
        if step is not None:
            return await self.replay_workflow_step(run_id, step, now)
        [enqueued] = await self.enqueue([replay_request(run_id, await self.get_run(run_id))], now)
        return enqueued.run_id

    # -- the worker's hot path (all fenced) -------------------------------------
    async def renew(
        self, worker_id: str, leases: Sequence[Lease], lease_seconds: float, now: datetime | None
    ) -> RenewResult:
        if not leases:
            return RenewResult(frozenset(), frozenset(), None)
        rows = await self._d.batch(
            "renew", _lease_items(leases), {"lease_seconds": lease_seconds}, now
        )
        held = {row["id"] for row in rows}
        return RenewResult(
            lost=frozenset(lease.run_id for lease in leases) - held,
            cancel_requested=frozenset(row["id"] for row in rows if row["cancel_requested"]),
            lease_expires_at=min((row["lease_expires_at"] for row in rows), default=None),
        )

    async def complete(self, outcomes: Sequence[Outcome], now: datetime | None) -> set[int]:
        # Only what this call writes counts: an outcome recorded by an earlier call is
        # stale here (recorded_outcomes answers the ambiguous-commit question).
        if not outcomes:
            return set()
        rules = await self._rules.get()
        moved: list[Transition] = []
        if any(o.workflow_step for o in outcomes):
            # A step's children are released (or skipped) in the transaction that
            # records its outcome, so they cannot drift from it.

            async def complete_steps(session: Session) -> set[int]:
                moved.clear()  # the body may run again (in_transaction)
                return await complete_in(
                    session, outcomes, rules, moved, map_max_items=self.map_max_items
                )

            written = await self._d.in_transaction(now, complete_steps)
        else:
            written = await self._complete_plain(outcomes, rules, moved, now)
        if moved:  # this process's next claim sees the new state at once
            self._tripped.forget()
        return written

    async def _complete_plain(
        self,
        outcomes: Sequence[Outcome],
        rules: Mapping[str, Breaker],
        moved: list[Transition],
        now: datetime | None,
    ) -> set[int]:
        """The hot path: one statement, no transaction to open and commit (the webhook
        outbox is inside it). An outcome that moves nothing is written there even when
        its handler has a breaker: a success on a closed breaker with no streak and no
        rate to count (ADR 0016). What a breaker must judge (a failure, a success that
        resets a streak, counts a rate or closes a half-open breaker) is left out by the
        statement and written here with its breaker's move in one transaction."""
        written = await _write_outcomes(OneShot(self._d, now), outcomes, bool(rules))
        if rules and (left := _left(outcomes, written)):

            async def judge(session: Session) -> list[Row]:
                moved.clear()  # the body may run again (in_transaction)
                return await _judged_in(session, left, rules, moved)

            written += await self._d.in_transaction(now, judge)
        return {row["id"] for row in written}

    async def recorded_outcomes(self, outcomes: Sequence[Outcome]) -> set[int]:
        if not outcomes:
            return set()
        items = [
            {"id": o.run_id, "fence": o.fence, "outcome": o.attempt_outcome.value} for o in outcomes
        ]
        return {row["id"] for row in await self._d.batch("recorded_outcomes", items, {}, None)}

    async def release(self, leases: Sequence[Lease], now: datetime | None) -> set[int]:
        if not leases:
            return set()
        shared = {"attempt_error": RELEASED_ATTEMPT}
        rows = await self._d.batch("release", _lease_items(leases), shared, now)
        return {row["id"] for row in rows}

    async def append_logs(self, lines: Sequence[LogLine], fences: Mapping[int, int]) -> int:
        if not lines:
            return 0
        items = [
            {
                "run_id": line.run_id,
                "fence": fences[line.run_id],
                "attempt": line.attempt,
                "at": line.at,
                "level": line.level,
                "message": line.message,
                "fields": line.fields_json,
            }
            for line in lines
        ]
        return len(await self._d.batch("append_logs", items, {}, None))

    # -- steering ---------------------------------------------------------------
    async def request_cancel(self, run_id: int, now: datetime | None) -> Run:
        async def cancel(session: Session) -> None:
            params = {"id": run_id, "error": CANCELLED_WAITING}
            if cancelled := await session.rows("cancel_waiting", params):
                await release_after(session, [row["id"] for row in cancelled], self.map_max_items)
            else:
                await session.rows("request_cancel_active", params)

        await self._d.in_transaction(now, cancel)
        run = await self.get_run(run_id)
        if run is None:
            raise RunNotFound(run_id)
        if run.state.is_terminal and run.state is not RunState.CANCELLED:
            raise InvalidTransition(run_id, run.state.value, "cancel")
        return run

    # -- housekeeping (leader duties, fenced by the leader's term) ---------------
    async def reap_expired(
        self, now: datetime | None, poison_after: int, limit: int, leader_term: int | None = None
    ) -> list[ReapedRun]:
        async def reap(session: Session) -> list[ReapedRun]:
            if not await self._term_holds(session, leader_term):
                return []
            expired = await session.rows("expired_leases", {"limit": limit})
            if not expired:
                return []
            rows = await session.batch("reap", [_verdict(row, poison_after) for row in expired])
            await release_after(session, [row["id"] for row in rows], self.map_max_items)
            return [ReapedRun(row["id"], row["fence"], RunState(row["state"])) for row in rows]

        return await self._d.in_transaction(now, reap)

    async def prune_finished(
        self, older_than: datetime, limit: int, leader_term: int | None = None
    ) -> int:
        return await self._prune("prune_finished", older_than, limit, leader_term)

    async def retire_history(self, older_than: datetime, leader_term: int | None = None) -> int:
        async def retire(session: Session) -> int:
            if not await self._term_holds(session, leader_term):
                return 0
            [row] = await session.rows("retire_history", {"older_than": older_than})
            return int(row["runs"])

        return await self._d.in_transaction(None, retire)


def _verdict(row: dict[str, Any], poison_after: int) -> dict[str, Any]:
    reaped = reap_verdict(
        cancel_requested=bool(row["cancel_requested"]),
        lost_count=row["lost_count"],
        attempt=row["attempt"],
        max_attempts=row["max_attempts"],
        poison_after=poison_after,
        worker_id=row["worker_id"],
    )
    return {
        "id": row["id"],
        "fence": row["fence"],
        "state": reaped.state.value,
        "error": reaped.error,
        "attempt_error": reaped.attempt_error,
    }
