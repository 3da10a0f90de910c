"""The one SQL store: claiming runs.

Runs no limit applies to are claimed in one statement (SKIP LOCKED on PostgreSQL;
SQLite's writer lock serialises it). Runs a limit applies to are chosen under
``in_serialised()``: count what runs, pick candidates in priority order in a few rounds,
and let the domain's ``choose`` keep every limit (ADR 0008).
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

import structlog

from rota.domain.limits import Active, Candidate, Limit, Limits, choose
from rota.domain.runs import ClaimedRun
from rota.store.core.base import CoreBase
from rota.store.dialect import ClaimLockBusy, Session
from rota.store.port import ClaimRequest
from rota.store.rows import claimed_from_row

log = structlog.get_logger("rota.store")

LIMITED_ROUNDS = 4  # windows a limited claim may pass over (see _choose_limited)
LIMITS_TTL_SECONDS = 1.0  # limits change rarely: read them at most once a second


class CoreClaim(CoreBase):
    _limits_cache: tuple[float, Limits] | None = None

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
        limits = await self._limits()
        plain = [q for q in queues if q not in limits.queues and limits.global_max is None]
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
                    "limited_handlers": list(limits.handlers),
                }
                claimed = [claimed_from_row(row) for row in await session.rows("claim", params)]
            want = request.limit - len(claimed)
            if want > 0 and not limits.any and keyed is None:
                [row] = await session.rows("has_keyed_work", {"queues": queues})
                keyed = bool(row["keyed"])
        if want > 0 and (limits.any or keyed):
            claimed += await self._claim_limited(request, queues, tags, limits, want, now)
        return claimed

    async def _limits(self) -> Limits:
        cached = self._limits_cache
        if cached is None or time.monotonic() - cached[0] > LIMITS_TTL_SECONDS:
            rows = await self._d.rows("limits")
            limits = Limits.of([Limit.parse(r["scope"], r["name"], r["max_running"]) for r in rows])
            self._limits_cache = cached = (time.monotonic(), limits)
        return cached[1]

    async def _claim_limited(
        self,
        request: ClaimRequest,
        queues: list[str],
        tags: list[str],
        limits: Limits,
        want: int,
        now: datetime | None,
    ) -> list[ClaimedRun]:
        """Claim runs some limit applies to, one claimer at a time cluster-wide."""

        async def claim_limited(session: Session) -> list[ClaimedRun]:
            chosen = await self._choose_limited(session, queues, tags, limits, want)
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

    async def _choose_limited(
        self, session: Session, queues: list[str], tags: list[str], limits: Limits, want: int
    ) -> list[int]:
        """Serialised: what runs now, and which candidates fit."""
        active = Active()
        for row in await session.rows("active_groups"):
            active.add(
                row["queue"], row["handler"], row["concurrency_key"], row["key_limit"], row["count"]
            )
        if active.global_full(limits):
            return []
        chosen: list[int] = []
        window = max(want * 4, 200)
        # A window full of runs whose key filled up is passed over: the next round
        # skips those keys in SQL. A few rounds bound the work under the lock.
        for _ in range(LIMITED_ROUNDS):
            full_queues = set(active.full_queues(limits))
            params: dict[str, Any] = {
                "queues": [q for q in queues if q not in full_queues],
                "tags": tags,
                "limited_handlers": list(limits.handlers),
                "limited_queues": list(limits.queues),
                "global_limit": limits.global_max is not None,
                "full_keys": active.full_keys(),
                "full_handlers": active.full_handlers(limits),
                "chosen": chosen,
                "window": window,
            }
            candidates = [
                Candidate(
                    r["id"], r["queue"], r["handler"], r["concurrency_key"], r["concurrency_limit"]
                )
                for r in await session.rows("limited_candidates", params)
            ]
            chosen += choose(candidates, active, limits, want - len(chosen))
            if len(chosen) >= want or len(candidates) < window:
                break
        return chosen

    def _forget_limits(self) -> None:
        self._limits_cache = None
