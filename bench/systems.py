"""The systems under test, behind one shape: a module with install / enqueue_batches /
prefill / drain_worker / latency_worker / LatencyProducer / UNFINISHED_SQL, plus how to
start one of its worker processes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from bench import rota_runner
from bench.peers import pgqueuer, procrastinate


@dataclass(frozen=True)
class RotaWorkerSettings:
    """The knobs the sweep picks for rota's worker processes."""

    concurrency: int = 200
    loop: str = "asyncio"
    pool_size: int = 4

    def describe(self) -> str:
        return (
            f"concurrency={self.concurrency} per process, {self.loop} loop, "
            f"pool_size={self.pool_size}"
        )


@dataclass(frozen=True)
class System:
    name: str
    module: ModuleType
    loop: str
    worker_kwargs: Callable[[str, int], dict[str, Any]] = field(
        default=lambda url, index: {"url": url}
    )
    settings: str = ""
    # "" at the system's best documented settings; ", defaults" as it ships (the
    # variant's name carries it, so both appear side by side in the report).
    variant_note: str = ""

    def version(self) -> str:
        return str(self.module.version())


def rota_system(worker: RotaWorkerSettings) -> System:
    def kwargs(url: str, index: int) -> dict[str, Any]:
        return {
            "url": url,
            "concurrency": worker.concurrency,
            "node_id": f"bench-w{index}",
            "pool_size": worker.pool_size,
        }

    return System(
        "rota",
        rota_runner,
        worker.loop,
        kwargs,
        f"App.work with {worker.describe()}; Settings defaults otherwise "
        "(lease 30 s, poll 1 s, LISTEN/NOTIFY); enqueue_many_async (COPY for >= 200 runs)",
    )


PGQUEUER = System(
    "PgQueuer",
    pgqueuer,
    pgqueuer.LOOP,
    settings=(
        f"asyncpg driver (1 connection per QueueManager), uvloop, batch_size="
        f"{pgqueuer.BATCH_SIZE}, mode=drain; Queries.install + optimize_autovacuum; "
        "durability=durable (default); Queries.enqueue with lists"
    ),
)
PROCRASTINATE = System(
    "Procrastinate",
    procrastinate,
    procrastinate.LOOP,
    settings=(
        f"PsycopgConnector (pool max_size={procrastinate.CONCURRENCY + 2}), "
        f"run_worker_async(concurrency={procrastinate.CONCURRENCY}, wait=False), "
        "listen_notify=True (default), delete_jobs=never (default); batch_defer_async"
    ),
)
PEERS = (PGQUEUER, PROCRASTINATE)


def rota_defaults_system() -> System:
    """rota as `rota worker` / `App.work()` ship: no option given, asyncio loop."""

    def kwargs(url: str, index: int) -> dict[str, Any]:
        return {"url": url, "concurrency": None, "node_id": f"bench-w{index}", "pool_size": None}

    return System(
        "rota",
        rota_runner,
        "asyncio",
        kwargs,
        "App.work() with no worker options and Settings defaults (what `rota worker` runs)",
        variant_note=", defaults",
    )


PGQUEUER_DEFAULTS = System(
    "PgQueuer",
    pgqueuer,
    "asyncio",
    lambda url, index: {"url": url, "batch_size": None},
    "QueueManager.run(mode=drain) with its default batch_size, plain asyncio loop",
    variant_note=", defaults",
)
DEFAULTS = (rota_defaults_system(), PGQUEUER_DEFAULTS)
