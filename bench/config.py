"""What one bench run does, as one frozen object built from the command line."""

from __future__ import annotations

from dataclasses import dataclass, replace

from bench.pg import ADMIN_URL

# A sustained run this long (seconds) is judged by issue 24's target: its last 5 minutes
# within 5% of its first 5, and the queue table's size flat.
LONG_SUSTAIN_S = 1800


@dataclass(frozen=True)
class BenchConfig:
    admin_url: str = ADMIN_URL
    jobs: int = 20_000  # enqueued per bulk-enqueue measurement and per drain
    enqueue_batch: int = 1_000
    repeats: int = 3  # for bulk enqueue, drains and the SQLite drain
    worker_counts: tuple[int, ...] = (1, 2)
    # rota's worker settings are swept once, and the best is used for every repeat.
    rota_concurrency: tuple[int, ...] = (100, 200, 500)
    rota_loops: tuple[str, ...] = ("asyncio", "uvloop")
    latency_rate: float = 50.0  # jobs per second, one at a time
    latency_seconds: float = 10.0
    sustain_minutes: float = 5.0
    sustain_workers: int = 2
    cron_schedules: int = 100_000  # (g) cron jobs firing every minute (issue 25's scale)
    cron_slots: int = 3  # (g) minute boundaries measured
    api_rows: int = 1_000_000  # (h) runs in the table behind the HTTP API (SQLite)
    # Issue 24: the API's and the dashboard's reads with 10,000,000 runs on PostgreSQL.
    api_rows_postgres: int = 10_000_000
    api_requests: int = 500  # (h) sequential GETs per filter
    trigger_seconds: float = 15.0  # (h) length of the trigger hammering
    memory_runs: int = 1_000_000  # (n) runs one worker drains while its RSS is watched
    # (q) issue 24: the 2-process drain at a small and at the default concurrency.
    claim_concurrencies: tuple[int, int] = (8, 100)
    retire_runs: int = 1_000_000  # (r) issue 24: runs in the day of history dropped
    # (r) the drain beside the drop: long enough to outlast it (20,000 runs drain in ~1 s
    # on a quiet 2-core machine, before a drop of today's schema is half done).
    retire_drain_jobs: int = 100_000
    retire_after_s: float = 1.0  # (r) how long the drain runs before the day is dropped
    scenario_timeout_s: float = 180.0  # any one measurement; then it is reported failed
    quick: bool = False

    def rows_on(self, store: str) -> int:
        """Runs loaded behind (h) and the dashboard's pages on ``store``."""
        return self.api_rows_postgres if store == "PostgreSQL" else self.api_rows

    @property
    def sustain_window_s(self) -> float:
        """Throughput is compared over windows this long: five minutes in a run of half
        an hour or more (issue 24: the last 5 minutes against the first 5), else a
        minute, or a third of a short (smoke-test) run."""
        total = self.sustain_minutes * 60
        if total >= LONG_SUSTAIN_S:
            return 300.0
        return 60.0 if total >= 120 else total / 3

    def smoke(self) -> BenchConfig:
        """``--quick``: everything, small, once."""
        return replace(
            self,
            jobs=2_000,
            repeats=1,
            rota_concurrency=(200,),
            rota_loops=("asyncio",),
            latency_seconds=3.0,
            sustain_minutes=0.5,
            cron_schedules=1_000,
            cron_slots=1,
            api_rows=50_000,
            api_rows_postgres=50_000,
            api_requests=100,
            trigger_seconds=3.0,
            memory_runs=40_000,
            retire_runs=50_000,
            retire_drain_jobs=10_000,
            retire_after_s=0.2,
            scenario_timeout_s=60.0,
            quick=True,
        )
