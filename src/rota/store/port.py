"""The store port: everything rota needs from a database, as one Protocol.

SQLite and PostgreSQL implement it; one contract suite (tests/contract) proves both
behave the same. Every write made under a lease names its fence. ``now`` is ``None`` in
production (the database clock decides, so machines with skewed clocks agree) and a
fixed instant in tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from rota.domain.runs import (
    Attempt,
    ClaimedRun,
    Enqueued,
    Lease,
    LogLine,
    NewRun,
    Outcome,
    ReapedRun,
    RenewResult,
    Run,
    RunFilter,
)


@dataclass(frozen=True)
class ClaimRequest:
    worker_id: str
    queues: tuple[str, ...]
    limit: int
    lease_seconds: float


@dataclass(frozen=True)
class SchemaStatus:
    current: int
    latest: int

    @property
    def up_to_date(self) -> bool:
        return self.current == self.latest


class Store(Protocol):
    dialect: str
    supports_transactional_completion: bool

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    # -- schema -------------------------------------------------------------
    async def schema_status(self) -> SchemaStatus: ...

    async def migrate(self) -> list[int]:
        """Apply pending migrations; returns the versions applied."""

    # -- producing ----------------------------------------------------------
    async def enqueue(self, runs: Sequence[NewRun], now: datetime | None) -> list[Enqueued]: ...

    # -- the worker's hot path (all fenced) ----------------------------------
    async def claim(self, request: ClaimRequest, now: datetime | None) -> list[ClaimedRun]: ...

    async def renew(
        self, worker_id: str, leases: Sequence[Lease], lease_seconds: float, now: datetime | None
    ) -> RenewResult: ...

    async def complete(self, outcomes: Sequence[Outcome], now: datetime | None) -> set[int]:
        """Record outcomes whose fence still holds. Returns the run ids written; any
        other outcome was stale and is discarded."""

    async def recorded_outcomes(self, outcomes: Sequence[Outcome]) -> set[int]:
        """After an ambiguous commit: which of these outcomes are already recorded."""

    async def release(self, leases: Sequence[Lease], now: datetime | None) -> set[int]:
        """Hand runs back (graceful shutdown) without spending an attempt."""

    async def append_logs(self, lines: Sequence[LogLine]) -> None: ...

    # -- housekeeping -------------------------------------------------------
    async def reap_expired(
        self, now: datetime | None, poison_after: int, limit: int
    ) -> list[ReapedRun]: ...

    async def prune_finished(self, older_than: datetime, limit: int) -> int: ...

    # -- reading and steering -----------------------------------------------
    async def get_run(self, run_id: int) -> Run | None: ...

    async def list_runs(self, run_filter: RunFilter) -> list[Run]: ...

    async def attempts(self, run_id: int) -> list[Attempt]: ...

    async def logs(self, run_id: int) -> list[LogLine]: ...

    async def request_cancel(self, run_id: int, now: datetime | None) -> Run: ...

    async def replay(self, run_id: int, now: datetime | None) -> int: ...

    async def wait_for_work(self, timeout: float) -> None:
        """Return when new work may be claimable (a notification) or after ``timeout``."""
