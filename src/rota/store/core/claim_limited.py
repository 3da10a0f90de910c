"""The one SQL store: the limited claim.

Runs a limit applies to are chosen under ``in_serialised()``: count what runs, pick
candidates in priority order in a few rounds (``claim_window.py`` says which), and let
the domain's ``choose`` keep every limit (ADR 0008). Rate limits ride the same serialised
path: the log of recent starts is read, extended and pruned in the claim's own
transaction (ADR 0016).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime

import structlog

from rota.domain.breakers import Breaker
from rota.domain.limits import Active, Limit, Limits, choose
from rota.domain.overlap import SKIPPED_REASON, overlap_skips
from rota.domain.rates import Rate, RateLimit, Rates, RateScope, RateUse
from rota.domain.runs import ClaimedRun
from rota.store.core.breakers import CoreBreakers
from rota.store.core.claim_window import (
    Ask,
    Gate,
    candidate_of,
    count_keys,
    is_plain,
    starts_logged,
    window_params,
)
from rota.store.core.queues import CoreQueues
from rota.store.core.recent import Recent
from rota.store.core.workflows import release_after
from rota.store.dialect import ClaimLockBusy, Session
from rota.store.port import ClaimRequest
from rota.store.rows import claimed_from_row

log = structlog.get_logger("rota.store")

LIMITED_ROUNDS = 4  # windows a limited claim may pass over (see _choose_limited)
WINDOW_SLACK = 16  # candidates beyond those wanted when no limit or key is in play


@dataclass
class Taken:
    """What a limited claim took, and what its windows showed of the queues."""

    claimed: list[ClaimedRun] = field(default_factory=list)
    saw_any: bool = False  # some due run was a candidate
    saw_plain: bool = False  # some candidate no limit, rate, key or breaker applies to


class CoreLimitedClaim(CoreBreakers, CoreQueues):
    _limits: Recent[tuple[Limits, Rates]]  # set in SqlStore.__init__
    # When (time.monotonic) a full rate bucket this process saw gets a slot back: an
    # idle worker wakes then instead of at its next poll (see next_due_in).
    _rate_frees_at: float | None = None

    async def _read_limits(self) -> tuple[Limits, Rates]:
        rows = await self._d.rows("limits")
        limits = Limits.of([Limit.parse(r["scope"], r["name"], r["max_running"]) for r in rows])
        return limits, Rates.of(await self.list_rates())

    async def list_rates(self) -> list[RateLimit]:
        rows = await self._d.rows("rates")
        return [
            RateLimit(RateScope(r["scope"]), r["name"], Rate(r["count"], r["period_seconds"]))
            for r in rows
        ]

    async def _claim_limited(
        self,
        request: ClaimRequest,
        queues: list[str],
        tags: list[str],
        gates: tuple[Limits, Rates, dict[str, Breaker], frozenset[str]],
        want: int,
        now: datetime | None,
        everything: bool,
    ) -> Taken:
        """Claim runs some limit applies to (every due run when ``everything``: the plain
        claim was skipped), one claimer at a time cluster-wide."""
        limits, rates, rules, tripped = gates
        taken = Taken()

        async def claim_limited(session: Session) -> None:
            # Statements under the lock: rate use (with the claim's instant and the
            # pruning of old starts), the candidate windows, and the claim itself (with
            # the new starts logged and, on PostgreSQL, the COMMIT): on PostgreSQL the
            # first travels with the lock, so a keyed claim whose first window holds
            # what is wanted waits on this process once while it holds the lock.
            use = await self._rate_use(session, rates) if rates.any else None
            view = await self._breaker_view(session, rules) if rules else None
            gate = Gate(rates, use, view, tripped)
            chosen = await self._choose_limited(
                session, Ask(queues, tags, want, everything), limits, gate, taken
            )
            if use is not None:
                free_in = use.next_free_in()
                self._rate_frees_at = None if free_in is None else time.monotonic() + free_in
            if view is not None:
                await self._save_view(session, view)
            if gate.doomed:
                await _fail_fast(session, gate.doomed, self.map_max_items)
            if gate.overlapped:
                await _skip_overlapped(session, gate.overlapped)
            if not chosen:
                return
            params = {
                "ids": chosen,
                "worker_id": request.worker_id,
                "lease_seconds": request.lease_seconds,
                **starts_logged(use),
            }
            # The COMMIT goes with it: the cluster's limits lock is let go on the
            # server, not after this process has read the claimed runs.
            rows = await session.rows_then_commit("claim_ids", params)
            taken.claimed = [claimed_from_row(row) for row in rows]

        try:
            await self._d.in_serialised(now, claim_limited)
        except ClaimLockBusy:
            log.info("limited claim skipped: another claimer holds the limits lock")
            return Taken()
        return taken

    async def _rate_use(self, session: Session, rates: Rates) -> RateUse:
        """The starts still inside their window, as of this claim's instant (which the
        same statement reads, pruning the starts that left their window)."""
        rows = await session.rows("rate_usage")
        use = RateUse(rates, int(rows[0]["at_micros"]))
        for r in rows:
            if r["scope"] is not None:
                bucket = (r["scope"], r["name"], r["rate_key"])
                use.add_live(bucket, int(r["used"]), int(r["first_leaves_at"]))
        return use

    async def _choose_limited(
        self, session: Session, ask: Ask, limits: Limits, gate: Gate, taken: Taken
    ) -> list[int]:
        """Serialised: what runs now, and which candidates fit."""
        # Queue, handler and global limits count every held run: read them all once.
        # With none of those set only keys count, and each candidate window brings the
        # held count of its own keys along (no GROUP BY over every held run).
        active = await _active(session) if limits.any else Active()
        if active.global_full(limits):
            return []
        counted_keys: set[str] = set()
        chosen: list[int] = []
        # A window full of runs whose key filled up is passed over: the next round
        # skips those keys in SQL. A few rounds bound the work under the lock.
        use = gate.use
        admit = gate.admit if use is not None or gate.view is not None else None
        passed: list[int] = []  # candidates seen and not chosen: the next round skips them
        for round_number in range(LIMITED_ROUNDS):
            # Runs that a full concurrency limit or key holds back fill a window without
            # being chosen: read four times what is wanted then. With only rates and
            # breakers in play, most of a first window is taken; fetching and building
            # four times the claim under the cluster-wide lock is what made rated
            # drains slow. Later rounds read wide again.
            wide = limits.any or round_number > 0
            window = max(ask.want * 4, 200) if wide else ask.want - len(chosen) + WINDOW_SLACK
            rows = await session.rows(
                "limited_candidates",
                window_params(ask, limits, gate, active, chosen + passed) | {"window": window},
            )
            candidates = [candidate_of(r) for r in rows]
            if not limits.any:
                count_keys(active, rows, counted_keys)
            skips = overlap_skips(candidates, active)
            if skips:
                gate.overlapped += skips
                passed += skips
                left_out = set(skips)
                candidates = [c for c in candidates if c.run_id not in left_out]
            taken.saw_any = taken.saw_any or bool(candidates)
            if ask.everything and not taken.saw_plain:
                taken.saw_plain = any(is_plain(c, limits, gate) for c in candidates)
            picked = choose(candidates, active, limits, ask.want - len(chosen), admit)
            chosen += picked
            taken_now = set(picked)
            passed += [c.run_id for c in candidates if c.run_id not in taken_now]
            if len(chosen) >= ask.want or len(rows) < window:
                break
        return chosen

    def _forget_limits(self) -> None:
        self._limits.forget()


async def _active(session: Session) -> Active:
    """The running runs per queue, handler and key (read under the serialised claim)."""
    active = Active()
    for row in await session.rows("active_groups"):
        active.add(
            row["queue"], row["handler"], row["concurrency_key"], row["key_limit"], row["count"]
        )
    return active


async def _skip_overlapped(session: Session, run_ids: list[int]) -> None:
    """End the slot runs their job's overlap policy leaves out: Skipped, with the reason."""
    rows = await session.rows("overlap_skip", {"ids": sorted(run_ids), "error": SKIPPED_REASON})
    if rows:
        log.info("slot runs skipped: previous run still live", run_ids=[r["id"] for r in rows])


async def _fail_fast(session: Session, doomed: dict[int, str], map_max_items: int) -> None:
    """End the runs a fail-fast breaker holds back: Failed, no attempt spent, in the
    claim's transaction; a workflow step's dependents are decided with it."""
    by_error: dict[str, list[int]] = {}
    for run_id, error in sorted(doomed.items()):
        by_error.setdefault(error, []).append(run_id)
    failed: list[int] = []
    for error, ids in by_error.items():
        rows = await session.rows("breaker_fail_fast", {"ids": ids, "error": error})
        failed += [row["id"] for row in rows]
    await release_after(session, failed, map_max_items)
