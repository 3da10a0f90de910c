"""The state table is true: every state change a store call makes is an entry of
``domain/states.py``'s transition table, and every entry is made by some store call.

A scripted life of runs drives each store call that moves runs (claim, renew, complete
ok / fail / timeout / retry / infrastructure retry / cancel / dead-letter, release,
reap, poison, cancel, deadline expiry, replay, a workflow run's release, skip, map
settlement, cancel and replay, a fail-fast breaker's claim, and an overlap skip) while a recorder
snapshots every run's state before and after each call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from itertools import count
from typing import Any, TypeVar

from rota.domain.breakers import Breaker, WhenOpen
from rota.domain.misfire import OverlapPolicy
from rota.domain.overlap import overlap_key
from rota.domain.runs import ClaimedRun, Outcome, RunFilter
from rota.domain.states import TRANSITIONS, AttemptOutcome, RunState
from rota.domain.workflows import StepKind, StepSpec, WorkflowDefinition
from rota.store.port import Store

from .support import (
    LEASE_SECONDS,
    at,
    claim_request,
    finished,
    is_step,
    lease_of,
    new_run,
    retrying,
)

T = TypeVar("T")
Change = tuple[RunState, RunState]


@dataclass
class Recorder:
    """Runs every store call between two snapshots of ``id -> state`` and keeps what
    changed, by the call that changed it."""

    store: Store
    seconds: count[int] = field(default_factory=lambda: count(1))
    made: dict[Change, set[str]] = field(default_factory=dict)
    births: dict[RunState, set[str]] = field(default_factory=dict)
    vanished: set[str] = field(default_factory=set)

    def tick(self, seconds: int = 1) -> datetime:
        """The next instant: time only moves forward, ``seconds`` at a time."""
        for _ in range(seconds - 1):
            next(self.seconds)
        return at(next(self.seconds))

    async def states(self) -> dict[int, RunState]:
        runs = await self.store.list_runs(RunFilter(limit=10_000))
        return {run.id: run.state for run in runs}

    async def call(self, label: str, make: Callable[[], Awaitable[T]]) -> T:
        before = await self.states()
        result = await make()
        after = await self.states()
        for run_id, state in after.items():
            old = before.get(run_id)
            if old is None:
                self.births.setdefault(state, set()).add(label)
            elif old is not state:
                self.made.setdefault((old, state), set()).add(label)
        if before.keys() - after.keys():
            self.vanished.add(label)
        return result

    # -- the store calls, each recorded ---------------------------------------
    async def enqueue(self, queue: str, **fields: Any) -> int:
        [enqueued] = await self.call(
            "enqueue", lambda: self.store.enqueue([new_run(queue=queue, **fields)], self.tick())
        )
        return enqueued.run_id

    async def claim(self, queue: str, seconds: int = 1) -> ClaimedRun:
        request = claim_request(queues=(queue,))
        now = self.tick(seconds)
        [claimed] = await self.call("claim", lambda: self.store.claim(request, now))
        return claimed

    async def claim_none(self, queue: str) -> None:
        """A claim that starts nothing (here: a fail-fast breaker ends what it finds)."""
        request = claim_request(queues=(queue,), limit=10)
        now = self.tick()
        assert await self.call("claim", lambda: self.store.claim(request, now)) == []

    async def renew(self, claimed: ClaimedRun) -> None:
        leases = [lease_of(claimed)]
        now = self.tick()
        await self.call("renew", lambda: self.store.renew("worker-1", leases, LEASE_SECONDS, now))

    async def complete(self, outcome: Outcome) -> None:
        now = self.tick()
        written = await self.call("complete", lambda: self.store.complete([outcome], now))
        assert written == {outcome.run_id}

    async def release(self, claimed: ClaimedRun) -> None:
        now = self.tick()
        await self.call("release", lambda: self.store.release([lease_of(claimed)], now))

    async def reap(self, poison_after: int = 5) -> None:
        # Past every lease taken so far.
        now = self.tick(int(LEASE_SECONDS) + 1)
        await self.call(
            "reap_expired", lambda: self.store.reap_expired(now, poison_after, limit=100)
        )

    async def cancel(self, run_id: int) -> None:
        now = self.tick()
        await self.call("request_cancel", lambda: self.store.request_cancel(run_id, now))

    async def expire_deadlines(self) -> None:
        now = self.tick()
        await self.call("expire_deadlines", lambda: self.store.expire_deadlines(now))

    async def replay(self, run_id: int) -> int:
        now = self.tick()
        return await self.call("replay", lambda: self.store.replay(run_id, now))

    async def start_workflow(self, definition: WorkflowDefinition, queue: str) -> int:
        runs = [new_run(queue=queue) for _ in definition.steps]
        now = self.tick()
        return await self.call(
            "start_workflow_run",
            lambda: self.store.start_workflow_run(definition, "{}", runs, now),
        )

    async def cancel_workflow(self, workflow_run_id: int) -> None:
        now = self.tick()
        await self.call(
            "cancel_workflow_run", lambda: self.store.cancel_workflow_run(workflow_run_id, now)
        )


def ended(claimed: ClaimedRun, state: RunState) -> Outcome:
    outcomes = {
        RunState.SUCCEEDED: AttemptOutcome.SUCCEEDED,
        RunState.FAILED: AttemptOutcome.FAILED,
        RunState.TIMED_OUT: AttemptOutcome.TIMED_OUT,
        RunState.CANCELLED: AttemptOutcome.CANCELLED,
        RunState.DEAD_LETTERED: AttemptOutcome.FAILED,
    }
    return finished(claimed, state, outcomes[state])


async def completions(life: Recorder) -> None:
    """Each way an attempt ends, from Claimed (no heartbeat yet) and from Running."""
    for state in (
        RunState.SUCCEEDED,
        RunState.FAILED,
        RunState.TIMED_OUT,
        RunState.DEAD_LETTERED,
    ):
        for heartbeat in (False, True):
            queue = f"{state}-{heartbeat}"
            await life.enqueue(queue)
            claimed = await life.claim(queue)
            if heartbeat:
                await life.renew(claimed)
            await life.complete(ended(claimed, state))


async def retries(life: Recorder) -> None:
    """A failed attempt retries, the retry is claimed when due, an infrastructure
    failure gives its attempt back, and a waiting retry can be cancelled."""
    run_id = await life.enqueue("retries", max_attempts=5)
    claimed = await life.claim("retries")
    await life.complete(retrying(claimed, delay=2))
    claimed = await life.claim("retries", seconds=3)
    await life.renew(claimed)
    await life.complete(retrying(claimed, delay=2))
    claimed = await life.claim("retries", seconds=3)
    await life.renew(claimed)
    infrastructure = Outcome(
        claimed.run_id,
        claimed.fence,
        RunState.RETRYING,
        AttemptOutcome.INFRASTRUCTURE,
        error="database unreachable",
        retry_delay=2,
        workflow_step=is_step(claimed),
    )
    await life.complete(infrastructure)
    await life.cancel(run_id)


async def cancels(life: Recorder) -> None:
    """A waiting run is cancelled at once; an active one when its worker stops (a
    completion, a release) or is lost (the reaper); a retry outranked by a cancel."""
    await life.cancel(await life.enqueue("cancel-waiting"))
    for heartbeat in (False, True):
        queue = f"cancel-completed-{heartbeat}"
        run_id = await life.enqueue(queue)
        claimed = await life.claim(queue)
        if heartbeat:
            await life.renew(claimed)
        await life.cancel(run_id)
        await life.complete(ended(claimed, RunState.CANCELLED))
    run_id = await life.enqueue("cancel-outranks-retry")
    claimed = await life.claim("cancel-outranks-retry")
    await life.cancel(run_id)
    await life.complete(retrying(claimed))
    run_id = await life.enqueue("cancel-released")
    claimed = await life.claim("cancel-released")
    await life.cancel(run_id)
    await life.release(claimed)
    run_id = await life.enqueue("cancel-reaped")
    claimed = await life.claim("cancel-reaped")
    await life.renew(claimed)
    await life.cancel(run_id)
    await life.reap()


async def hand_backs(life: Recorder) -> None:
    """Released on shutdown and reaped after a lost lease, from Claimed and Running."""
    for heartbeat in (False, True):
        queue = f"released-{heartbeat}"
        await life.enqueue(queue)
        claimed = await life.claim(queue)
        if heartbeat:
            await life.renew(claimed)
        await life.release(claimed)
    for heartbeat in (False, True):
        queue = f"reaped-{heartbeat}"
        await life.enqueue(queue)
        claimed = await life.claim(queue)
        if heartbeat:
            await life.renew(claimed)
        await life.reap()


async def dead_letters(life: Recorder) -> None:
    """The reaper dead-letters a run whose last attempt lost its lease, and a poison
    run; a dead-lettered run is replayed as a fresh run (it does not move itself)."""
    spent = await life.enqueue("spent", max_attempts=1)
    await life.claim("spent")
    await life.reap()
    await life.enqueue("poison")
    claimed = await life.claim("poison")
    await life.renew(claimed)
    await life.reap(poison_after=1)
    await life.replay(spent)


async def deadlines(life: Recorder) -> None:
    """A run not started by its deadline is cancelled; a limited claim claims too."""
    await life.enqueue("deadline", deadline=at(0))
    await life.expire_deadlines()
    await life.enqueue("limited", concurrency_key="one-at-a-time", concurrency_limit=1)
    claimed = await life.claim("limited")
    await life.complete(ended(claimed, RunState.SUCCEEDED))


async def fail_fast(life: Recorder) -> None:
    """An open breaker whose handler fails fast ends its waiting runs, new and retrying,
    at the claim."""
    rule = Breaker(failures=1, cool_down=3600, when_open=WhenOpen.FAIL)
    await life.store.set_breaker_rule("fast", rule)
    await life.enqueue("fast", handler="fast")
    await life.complete(retrying(await life.claim("fast"), delay=0.0))  # opens it
    await life.enqueue("fast", handler="fast")
    await life.claim_none("fast")


async def overlap(life: Recorder) -> None:
    """A slot run of a ``skip`` job that falls due while its previous run is still
    live ends Skipped at the claim (ADR 0029)."""
    key = overlap_key(OverlapPolicy.SKIP, 999)
    await life.enqueue("overlap", concurrency_key=key, concurrency_limit=1)
    await life.claim("overlap")  # still running...
    await life.enqueue("overlap", concurrency_key=key, concurrency_limit=1)
    await life.claim_none("overlap")  # ...when the next slot falls due


def _flow(name: str, *steps: StepSpec) -> WorkflowDefinition:
    return WorkflowDefinition(name, steps)


async def workflows(life: Recorder) -> None:
    """A step's end releases or skips its children; a map fans out and settles when
    its items end; a workflow run is cancelled; a replayed map item reopens its map
    and the steps its failure skipped."""
    top = StepSpec("top", "job")
    below = StepSpec("below", "job", after=("top",))
    await life.start_workflow(_flow("released", top, below), "wf-released")
    await life.complete(ended(await life.claim("wf-released"), RunState.SUCCEEDED))
    await life.start_workflow(_flow("skipped", top, below), "wf-skipped")
    await life.complete(ended(await life.claim("wf-skipped"), RunState.FAILED))

    each = StepSpec("each", "job", kind=StepKind.MAP, over="top")
    after_map = StepSpec("after", "job", after=("each",))
    for ending in (RunState.SUCCEEDED, RunState.DEAD_LETTERED):
        queue = f"wf-map-{ending}"
        await life.start_workflow(_flow("mapped", top, each, after_map), queue)
        claimed = await life.claim(queue)
        await life.complete(
            Outcome(
                claimed.run_id,
                claimed.fence,
                RunState.SUCCEEDED,
                AttemptOutcome.SUCCEEDED,
                "[1]",
                workflow_step=is_step(claimed),
            )
        )
        item = await life.claim(queue)
        await life.complete(ended(item, ending))
    await life.replay(item.run_id)  # the dead item: its map and "after" wait again

    workflow_run_id = await life.start_workflow(_flow("cancelled", top, below), "wf-cancel")
    await life.cancel_workflow(workflow_run_id)


async def test_every_state_change_is_in_the_table_and_every_entry_is_made(
    store: Store,
) -> None:
    life = Recorder(store)
    chapters = (
        completions,
        retries,
        cancels,
        hand_backs,
        dead_letters,
        deadlines,
        workflows,
        fail_fast,
        overlap,
    )
    for chapter in chapters:
        await chapter(life)

    unlisted = {change: calls for change, calls in life.made.items() if change not in TRANSITIONS}
    assert unlisted == {}, "state changes the transition table does not list"
    never_made = set(TRANSITIONS) - set(life.made)
    assert never_made == set(), "table entries no store call made"
    births = {RunState.PENDING, RunState.WAITING}
    assert set(life.births) == births, "runs are born Pending (a workflow's steps: Waiting)"
    assert life.vanished == set(), "no run disappears in this life"
