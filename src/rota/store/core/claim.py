"""The one SQL store: claiming runs.

Runs no limit applies to are claimed in one statement (SKIP LOCKED on PostgreSQL;
SQLite's writer lock serialises it). Runs a limit, rate, key or breaker applies to are
left to the limited claim (``claim_limited.py``), after the plain one or, for an idle
worker woken for a keyed run, beside it.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from datetime import datetime

import structlog

from rota.domain.breakers import Breaker
from rota.domain.limits import Limits
from rota.domain.rates import Rates
from rota.domain.runs import ClaimedRun
from rota.store.core.claim_limited import CoreLimitedClaim, Taken
from rota.store.port import ClaimRequest
from rota.store.rows import claimed_from_row

log = structlog.get_logger("rota.store")

KEYED_DUE_SLACK = 0.01  # seconds

Lane = tuple[tuple[str, ...], tuple[str, ...]]  # (plain queues, tags) of a claim


class CoreClaim(CoreLimitedClaim):
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
        # The claim statements skip a paused queue themselves (ADR 0035); this copy, read
        # at most once a second, spares a worker whose queues are all paused a statement.
        paused = await self._paused.get()
        if paused:
            queues = [q for q in queues if q not in paused]
            if not queues:
                return []
            request = replace(request, queues=tuple(queues))
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

    def _note_lane(self, lane: Lane, dry: bool, plain_empty: bool, taken: Taken) -> None:
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
