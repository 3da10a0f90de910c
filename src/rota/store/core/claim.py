"""The one SQL store: claiming runs.

Runs no limit applies to are claimed in one statement (SKIP LOCKED on PostgreSQL;
SQLite's writer lock serialises it). Runs a limit applies to are chosen under
``in_serialised()``: count what runs, pick candidates in priority order in a few rounds,
and let the domain's ``choose`` keep every limit (ADR 0008). Rate limits ride the same
serialised path: the log of recent starts is read, extended and pruned in the claim's
own transaction (ADR 0016).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import structlog

from rota.domain.breakers import Breaker, BreakerView
from rota.domain.limits import Active, Candidate, Limit, Limits, choose
from rota.domain.overlap import SKIPPED_REASON, overlap_skips
from rota.domain.rates import Rate, RateLimit, Rates, RateScope, RateUse
from rota.domain.runs import ClaimedRun
from rota.store.core.breakers import CoreBreakers
from rota.store.core.recent import Recent
from rota.store.core.workflows import release_after
from rota.store.dialect import ClaimLockBusy, Row, Session
from rota.store.port import ClaimRequest
from rota.store.rows import claimed_from_row

log = structlog.get_logger("rota.store")

LIMITED_ROUNDS = 4  # windows a limited claim may pass over (see _choose_limited)
WINDOW_SLACK = 16  # candidates beyond those wanted when no limit or key is in play
KEYED_DUE_SLACK = 0.01  # seconds


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
    # Slot runs their job's overlap policy ends Skipped (rota.domain.overlap).
    overlapped: list[int] = field(default_factory=list)

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


Lane = tuple[tuple[str, ...], tuple[str, ...]]  # (plain queues, tags) of a claim


@dataclass
class _Taken:
    """What a limited claim took, and what its windows showed of the queues."""

    claimed: list[ClaimedRun] = field(default_factory=list)
    saw_any: bool = False  # some due run was a candidate
    saw_plain: bool = False  # some candidate no limit, rate, key or breaker applies to


class CoreClaim(CoreBreakers):
    _limits: Recent[tuple[Limits, Rates]]  # set in SqlStore.__init__
    # When (time.monotonic) a full rate bucket this process saw gets a slot back: an
    # idle worker wakes then instead of at its next poll (see next_due_in).
    _rate_frees_at: float | None = None
    # Lanes whose plain claim last came back empty while the limited claim had work:
    # their next claims skip the plain statement (which walks every rated run ahead of
    # a plain one) and let the limited claim take plain runs too, until it sees one or
    # sees nothing due (ADR 0016). Rebound, never mutated: the class default is shared.
    _plain_dry: frozenset[Lane] = frozenset()
    # When (time.monotonic) the earliest keyed run an idle worker was told of falls due
    # (next_due_in): its wake-up claim then asks for keyed work beside the plain claim.
    _keyed_due_at: float | None = None

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
        limited = limits.any or rates.any or bool(tripped)
        lane = (tuple(plain), tuple(tags))
        dry = bool(plain) and lane in self._plain_dry
        claimed: list[ClaimedRun] = []
        if plain and not dry:
            handlers = [*limits.handlers, *rates.handlers]
            ask_keyed = keyed is None and not limited
            if ask_keyed and self._keyed_fell_due() and request.limit > 1:
                lanes = (plain, queues, tags, handlers)
                return await self._claim_side_by_side(
                    request, lanes, (limits, rates, rules, tripped), now
                )
            claimed, found = await self._claim_plain(request, plain, tags, handlers, now, ask_keyed)
            keyed = found if ask_keyed else keyed
        want = request.limit - len(claimed)
        if want > 0 and (limited or keyed or dry):
            gates = (limits, rates, rules, tripped)
            taken = await self._claim_limited(request, queues, tags, gates, want, now, dry)
            if plain:
                self._note_lane(lane, dry, plain_empty=not claimed, taken=taken)
            claimed += taken.claimed
        return claimed

    def _keyed_fell_due(self) -> bool:
        """Whether a keyed run an idle worker was told of has fallen due (the hint is
        used once). A wake-up timer may fire a few milliseconds early: KEYED_DUE_SLACK."""
        due_at = self._keyed_due_at
        if due_at is None or due_at > time.monotonic() + KEYED_DUE_SLACK:
            return False
        self._keyed_due_at = None
        return True

    async def _claim_side_by_side(
        self,
        request: ClaimRequest,
        lanes: tuple[list[str], list[str], list[str], list[str]],
        gates: tuple[Limits, Rates, dict[str, Breaker], frozenset[str]],
        now: datetime | None,
    ) -> list[ClaimedRun]:
        """An idle worker woken for a keyed run (a skip job's slot, say): the plain and
        the limited claim go side by side on two connections, each with part of the
        room, instead of the limited one waiting for the plain one and a second claim
        (issue 25: a skip job's run started 16 ms after an allow job's of the same slot).
        What either side claimed is returned; an error is raised only if both failed or
        nothing was claimed, so no claimed run is dropped."""
        plain, queues, tags, handlers = lanes
        keyed_room = request.limit // 2
        plain_request = replace(request, limit=request.limit - keyed_room)
        both = await asyncio.gather(
            self._claim_plain(plain_request, plain, tags, handlers, now, ask_keyed=False),
            self._claim_limited(request, queues, tags, gates, keyed_room, now, everything=False),
            return_exceptions=True,
        )
        plain_side, keyed_side = both
        claimed = [] if isinstance(plain_side, BaseException) else plain_side[0]
        claimed += [] if isinstance(keyed_side, BaseException) else keyed_side.claimed
        for side in both:
            if isinstance(side, BaseException):
                if not claimed or not isinstance(side, Exception):
                    raise side
                # The error will meet the next claim too; these runs are ours now.
                log.info("one side of a claim failed", error=type(side).__name__)
        return claimed

    def _note_lane(self, lane: Lane, dry: bool, plain_empty: bool, taken: _Taken) -> None:
        """Whether the next claim of this lane may skip the plain statement."""
        if dry and (taken.saw_plain or not taken.saw_any):
            self._plain_dry = self._plain_dry - {lane}
        elif not dry and plain_empty and taken.saw_any:
            self._plain_dry = self._plain_dry | {lane}

    async def _claim_plain(
        self,
        request: ClaimRequest,
        plain: list[str],
        tags: list[str],
        limited_handlers: list[str],
        now: datetime | None,
        ask_keyed: bool,
    ) -> tuple[list[ClaimedRun], bool]:
        """The lock-free claim of runs no limit applies to, and, if it found none and
        ``ask_keyed``, whether keyed work waits in the request's queues."""
        params = {
            "queues": plain,
            "limit": request.limit,
            "worker_id": request.worker_id,
            "lease_seconds": request.lease_seconds,
            "tags": tags,
            "limited_handlers": limited_handlers,
        }
        # One connection for both: small claims are frequent, and a second pool
        # checkout each would show.
        async with self._d.session(now) as session:
            claimed = [claimed_from_row(row) for row in await session.rows("claim", params)]
            # Plain runs found are returned at once: asking about keyed work first would
            # hold back their start by a round trip (an idle worker's pickup). The worker
            # claims again at once after any claim that found runs, and that claim asks.
            if not claimed and ask_keyed:
                queues = list(dict.fromkeys(request.queues))
                [row] = await session.rows("has_keyed_work", {"queues": queues})
                return claimed, bool(row["keyed"])
        return claimed, False

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
    ) -> _Taken:
        """Claim runs some limit applies to (every due run when ``everything``: the plain
        claim was skipped), one claimer at a time cluster-wide."""
        limits, rates, rules, tripped = gates
        taken = _Taken()

        async def claim_limited(session: Session) -> None:
            # Round trips under the lock: rate use (with the claim's instant and the
            # pruning of old starts), the candidate windows, and the claim itself (with
            # the new starts logged): three when one window holds what is wanted.
            use = await self._rate_use(session, rates) if rates.any else None
            view = await self._breaker_view(session, rules) if rules else None
            gate = _Gate(rates, use, view, tripped)
            chosen = await self._choose_limited(
                session, _Ask(queues, tags, want, everything), limits, gate, taken
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
                **_starts_logged(use),
            }
            rows = await session.rows("claim_ids", params)
            taken.claimed = [claimed_from_row(row) for row in rows]

        try:
            await self._d.in_serialised(now, claim_limited)
        except ClaimLockBusy:
            log.info("limited claim skipped: another claimer holds the limits lock")
            return _Taken()
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
        self, session: Session, ask: _Ask, limits: Limits, gate: _Gate, taken: _Taken
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
                _window_params(ask, limits, gate, active, chosen + passed) | {"window": window},
            )
            candidates = [_candidate(r) for r in rows]
            if not limits.any:
                _count_keys(active, rows, counted_keys)
            skips = overlap_skips(candidates, active)
            if skips:
                gate.overlapped += skips
                passed += skips
                left_out = set(skips)
                candidates = [c for c in candidates if c.run_id not in left_out]
            taken.saw_any = taken.saw_any or bool(candidates)
            if ask.everything and not taken.saw_plain:
                taken.saw_plain = any(_is_plain(c, limits, gate) for c in candidates)
            picked = choose(candidates, active, limits, ask.want - len(chosen), admit)
            chosen += picked
            taken_now = set(picked)
            passed += [c.run_id for c in candidates if c.run_id not in taken_now]
            if len(chosen) >= ask.want or len(rows) < window:
                break
        return chosen

    def _forget_limits(self) -> None:
        self._limits.forget()


@dataclass(frozen=True)
class _Ask:
    """What a limited claim looks for."""

    queues: list[str]
    tags: list[str]
    want: int
    everything: bool  # plain runs too: the plain claim was skipped


def _window_params(
    ask: _Ask, limits: Limits, gate: _Gate, active: Active, seen: list[int]
) -> dict[str, Any]:
    """The candidate query's parameters for the next window, skipping every group the
    runs held and chosen so far filled."""
    full_queues = set(active.full_queues(limits))
    full_handlers = active.full_handlers(limits)
    if gate.use is not None:
        full_queues.update(gate.use.full(RateScope.QUEUE))
        full_handlers += gate.use.full(RateScope.HANDLER)
    return {
        "queues": [q for q in ask.queues if q not in full_queues],
        "tags": ask.tags,
        "limited_handlers": [*limits.handlers, *gate.handlers],
        "limited_queues": [*limits.queues, *gate.rates.queues],
        "global_limit": limits.global_max is not None,
        "everything": ask.everything,
        "key_counts": not limits.any,
        "full_keys": active.full_keys(),
        "full_handlers": full_handlers,
        # Nothing passed over can fit later in this claim: every limit, rate and probe
        # budget only fills as the claim goes on.
        "chosen": seen,
    }


def _candidate(r: Row) -> Candidate:
    return Candidate(
        r["id"],
        r["queue"],
        r["handler"],
        r["concurrency_key"],
        r["concurrency_limit"],
        r["rate_key"],
        r["breaker_key"],
    )


def _count_keys(active: Active, rows: list[Row], counted: set[str]) -> None:
    """Add what runs now of each key first seen in this window (read with it): a key
    seen before already counts its held runs and the ones this claim chose."""
    for r in rows:
        key = r["concurrency_key"]
        if key is None or key in counted:
            continue
        counted.add(key)
        if r["key_running"] is not None:
            active.add_key(key, r["key_limit"], int(r["key_running"]))


def _is_plain(c: Candidate, limits: Limits, gate: _Gate) -> bool:
    """A run the plain claim would take: no key, limit, rate or open breaker on it."""
    return (
        c.concurrency_key is None
        and c.handler not in limits.handlers
        and c.handler not in gate.handlers
        and c.queue not in limits.queues
        and c.queue not in gate.rates.queues
    )


def _starts_logged(use: RateUse | None) -> dict[str, list[Any]]:
    """The rate log's rows for this claim's starts, as claim_ids writes them: one per
    bucket (every start of a claim shares its instant), in bucket order."""
    rows: list[tuple[str, str, str, int, int]] = []
    if use is not None:
        counted = sorted(Counter(use.admitted).items(), key=lambda item: item[0][0])
        rows = [(*bucket, use.now + rate.period_micros, n) for (bucket, rate), n in counted]
    names = ("rate_scope", "rate_name", "rate_key", "rate_leaves_at", "rate_starts")
    return {name: [row[i] for row in rows] for i, name in enumerate(names)}


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
