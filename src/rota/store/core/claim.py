"""The one SQL store: claiming runs.

Runs no limit applies to are claimed in one statement (SKIP LOCKED on PostgreSQL;
SQLite's writer lock serialises it). Runs a limit applies to are chosen under
``in_serialised()``: count what runs, pick candidates in priority order in a few rounds,
and let the domain's ``choose`` keep every limit (ADR 0008). Rate limits ride the same
serialised path: the log of recent starts is read, extended and pruned in the claim's
own transaction (ADR 0016).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import structlog

from rota.domain.breakers import Breaker, BreakerView
from rota.domain.limits import Active, Candidate, Limit, Limits, choose
from rota.domain.rates import Rate, RateLimit, Rates, RateScope, RateUse, micros
from rota.domain.runs import ClaimedRun
from rota.store.core.breakers import CoreBreakers
from rota.store.core.recent import Recent
from rota.store.core.workflows import release_after
from rota.store.dialect import ClaimLockBusy, Session
from rota.store.port import ClaimRequest
from rota.store.rows import claimed_from_row

log = structlog.get_logger("rota.store")

LIMITED_ROUNDS = 4  # windows a limited claim may pass over (see _choose_limited)
WINDOW_SLACK = 16  # candidates beyond those wanted when no limit or key is in play


@dataclass
class _Gate:
    """What a candidate must also pass after the concurrency limits: its breaker, then
    its rates. A run is counted as a probe only once both let it through."""

    rates: Rates
    use: RateUse | None
    view: BreakerView | None
    tripped: frozenset[str]  # handlers whose runs the plain claim leaves to this path
    # Runs held back by a breaker whose handler fails fast: run id -> the error to record.
    doomed: dict[int, str] = field(default_factory=dict)

    def admit(self, c: Candidate) -> bool:
        if self.view is not None and not self.view.allows(c.handler, c.breaker_key):
            if self.view.fails_fast(c.handler):
                self.doomed[c.run_id] = self.view.why_closed(c.handler, c.breaker_key)
            return False
        if self.use is not None and not self.use.admit(c.queue, c.handler, c.rate_key):
            return False
        if self.view is not None:
            self.view.take(c.handler, c.breaker_key)
        return True

    @property
    def handlers(self) -> list[str]:
        return [*self.rates.handlers, *self.tripped]


class CoreClaim(CoreBreakers):
    _limits: Recent[tuple[Limits, Rates]]  # set in SqlStore.__init__
    # When (time.monotonic) a full rate bucket this process saw gets a slot back: an
    # idle worker wakes then instead of at its next poll (see next_due_in).
    _rate_frees_at: float | None = None

    async def claim(self, request: ClaimRequest, now: datetime | None) -> list[ClaimedRun]:
        # A queue listed twice would pick its runs twice and fill the limit with
        # duplicates.
        queues = list(dict.fromkeys(request.queues))
        tags = sorted(set(request.tags))
        keyed: bool | None = None  # not known yet: asked only if needed
        if self._d.claims_read_first:
            [first] = await self._d.rows("anything_due", {"queues": queues}, now)
            if not first["due"]:
                return []
            keyed = bool(first["keyed"])
        limits, rates = await self._limits.get()
        rules = await self._rules.get()
        tripped = await self._tripped.get() if rules else frozenset()
        plain = [
            q
            for q in queues
            if q not in limits.queues and q not in rates.queues and limits.global_max is None
        ]
        # One connection for the plain claim and, if it left room, the keyed-work check:
        # small claims are frequent, and a second pool checkout each would show.
        async with self._d.session(now) as session:
            claimed: list[ClaimedRun] = []
            if plain:
                params = {
                    "queues": plain,
                    "limit": request.limit,
                    "worker_id": request.worker_id,
                    "lease_seconds": request.lease_seconds,
                    "tags": tags,
                    "limited_handlers": [*limits.handlers, *rates.handlers],
                }
                claimed = [claimed_from_row(row) for row in await session.rows("claim", params)]
            want = request.limit - len(claimed)
            limited = limits.any or rates.any or bool(tripped)
            # Plain runs found are returned at once: asking about keyed work first would
            # hold back their start by a round trip (an idle worker's pickup). The worker
            # claims again at once after any claim that found runs, and that claim asks.
            if want > 0 and not limited and keyed is None and not claimed:
                [row] = await session.rows("has_keyed_work", {"queues": queues})
                keyed = bool(row["keyed"])
        if want > 0 and (limited or keyed):
            gates = (limits, rates, rules, tripped)
            claimed += await self._claim_limited(request, queues, tags, gates, want, now)
        return claimed

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
    ) -> list[ClaimedRun]:
        """Claim runs some limit applies to, one claimer at a time cluster-wide."""
        limits, rates, rules, tripped = gates

        async def claim_limited(session: Session) -> list[ClaimedRun]:
            use = await self._rate_use(session, rates) if rates.any else None
            view = await self._breaker_view(session, rules) if rules else None
            gate = _Gate(rates, use, view, tripped)
            chosen = await self._choose_limited(session, queues, tags, limits, gate, want)
            if use is not None:
                await self._record_starts(session, use)
            if view is not None:
                await self._save_view(session, view)
            if gate.doomed:
                await _fail_fast(session, gate.doomed)
            if not chosen:
                return []
            params = {
                "ids": chosen,
                "worker_id": request.worker_id,
                "lease_seconds": request.lease_seconds,
            }
            return [claimed_from_row(row) for row in await session.rows("claim_ids", params)]

        try:
            return await self._d.in_serialised(now, claim_limited)
        except ClaimLockBusy:
            log.info("limited claim skipped: another claimer holds the limits lock")
            return []

    async def _rate_use(self, session: Session, rates: Rates) -> RateUse:
        """The starts still inside their window, as of this claim's ``now``."""
        [row] = await session.rows("claim_now")
        use = RateUse(rates, micros(row["now"]))
        for r in await session.rows("rate_usage", {"at": use.now}):
            use.add_live((r["scope"], r["name"], r["rate_key"]), r["used"], r["first_leaves_at"])
        return use

    async def _record_starts(self, session: Session, use: RateUse) -> None:
        """One log row per bucket with the starts admitted in it (every start of this
        claim shares its instant), written in the claim's transaction."""
        items = [
            {
                "scope": scope,
                "name": name,
                "rate_key": key,
                "leaves_at": use.now + rate.period_micros,
                "starts": starts,
            }
            for ((scope, name, key), rate), starts in sorted(
                Counter(use.admitted).items(), key=lambda item: item[0][0]
            )
        ]
        if items:
            await session.batch("rate_record", items)
        free_in = use.next_free_in()
        self._rate_frees_at = None if free_in is None else time.monotonic() + free_in

    async def _choose_limited(
        self,
        session: Session,
        queues: list[str],
        tags: list[str],
        limits: Limits,
        gate: _Gate,
        want: int,
    ) -> list[int]:
        """Serialised: what runs now, and which candidates fit."""
        # What runs now matters only to concurrency limits and keys: a claim that only
        # rates or breakers steer (no limit, no keyed candidate) skips the read.
        active: Active | None = None
        if limits.any:
            active = await _active(session)
            if active.global_full(limits):
                return []
        chosen: list[int] = []
        # A window full of runs whose key filled up is passed over: the next round
        # skips those keys in SQL. A few rounds bound the work under the lock.
        use = gate.use
        admit = gate.admit if use is not None or gate.view is not None else None
        passed: list[int] = []  # candidates seen and not chosen: the next round skips them
        for round_number in range(LIMITED_ROUNDS):
            # Runs that a full concurrency limit or key holds back fill a window without
            # being chosen: read four times what is wanted then. With only rates and
            # breakers in play (no limit, no keyed run seen), most of a first window is
            # taken; fetching and building four times the claim under the cluster-wide
            # lock is what made rated drains slow. Later rounds read wide again.
            wide = limits.any or active is not None or round_number > 0
            window = max(want * 4, 200) if wide else want - len(chosen) + WINDOW_SLACK
            # Until read, nothing runs that a limit would count (no limit, no key).
            seen = active if active is not None else Active()
            full_queues = set(seen.full_queues(limits))
            full_handlers = seen.full_handlers(limits)
            if use is not None:
                full_queues.update(use.full(RateScope.QUEUE))
                full_handlers += use.full(RateScope.HANDLER)
            params: dict[str, Any] = {
                "queues": [q for q in queues if q not in full_queues],
                "tags": tags,
                "limited_handlers": [*limits.handlers, *gate.handlers],
                "limited_queues": [*limits.queues, *gate.rates.queues],
                "global_limit": limits.global_max is not None,
                "full_keys": seen.full_keys(),
                "full_handlers": full_handlers,
                # Nothing passed over can fit later in this claim: every limit, rate
                # and probe budget only fills as the claim goes on.
                "chosen": [*chosen, *passed],
                "window": window,
            }
            candidates = [
                Candidate(
                    r["id"],
                    r["queue"],
                    r["handler"],
                    r["concurrency_key"],
                    r["concurrency_limit"],
                    r["rate_key"],
                    r["breaker_key"],
                )
                for r in await session.rows("limited_candidates", params)
            ]
            if active is None and any(c.concurrency_key is not None for c in candidates):
                active = await _active(session)
            seen = active if active is not None else seen
            taken = choose(candidates, seen, limits, want - len(chosen), admit)
            chosen += taken
            picked = set(taken)
            passed += [c.run_id for c in candidates if c.run_id not in picked]
            if len(chosen) >= want or len(candidates) < window:
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


async def _fail_fast(session: Session, doomed: dict[int, str]) -> None:
    """End the runs a fail-fast breaker holds back: Failed, no attempt spent, in the
    claim's transaction; a workflow step's dependents are decided with it."""
    by_error: dict[str, list[int]] = {}
    for run_id, error in sorted(doomed.items()):
        by_error.setdefault(error, []).append(run_id)
    failed: list[int] = []
    for error, ids in by_error.items():
        rows = await session.rows("breaker_fail_fast", {"ids": ids, "error": error})
        failed += [row["id"] for row in rows]
    await release_after(session, failed)
