"""(f) Issue 3: the drain with per-key concurrency limits, beside the unconstrained drain.

The same ``cfg.jobs`` no-op runs, spread round-robin over KEYS concurrency keys capped at
KEY_LIMIT each, drained by the 2 worker processes; the unconstrained 2-process drain is
measured right before it in each repeat (same settings, fresh database each), so drift on
the machine hits both alike. While the keyed drain runs, a sampler thread counts the
claimed/running runs per key every SAMPLE_S, to show the cap held.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import psycopg

from bench import rota_runner, scenarios
from bench.config import BenchConfig
from bench.results import Results
from bench.systems import RotaWorkerSettings, rota_system

KEYS = 100
KEY_LIMIT = 5
SAMPLE_S = 0.01
MAX_SAMPLES = 100_000  # bounds the sampler even if nobody stops it
PER_KEY_SQL = (
    "SELECT concurrency_key, count(*) FROM rota_runs"
    " WHERE state IN ('claimed', 'running') GROUP BY 1"
)
UNCONSTRAINED = "2 processes, no keys"
LIMITED = f"2 processes, {KEYS} keys x limit {KEY_LIMIT}"


@dataclass
class KeySampler:
    """Highest claimed+running count seen per key, sampled on its own connection."""

    url: str
    max_per_key: int = 0
    max_total: int = 0
    samples: int = 0
    busy_samples: int = 0  # samples that saw at least one run in flight
    _stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        with psycopg.connect(self.url, autocommit=True, connect_timeout=5) as conn:
            while not self._stop.is_set() and self.samples < MAX_SAMPLES:
                counts = [int(n) for _, n in conn.execute(PER_KEY_SQL).fetchall()]
                self.samples += 1
                if counts:
                    self.busy_samples += 1
                    self.max_per_key = max(self.max_per_key, max(counts))
                    self.max_total = max(self.max_total, sum(counts))
                time.sleep(SAMPLE_S)

    @contextlib.contextmanager
    def running(self) -> Iterator[KeySampler]:
        thread = threading.Thread(target=self.run, name="key-sampler", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            thread.join(10)


def limited_drain(cfg: BenchConfig, results: Results, worker: RotaWorkerSettings) -> None:
    system = rota_system(worker)
    processes = max(cfg.worker_counts)
    reference = results.attempt(
        "limited-drain",
        "rota",
        UNCONSTRAINED,
        lambda: scenarios.pg_drain_once(cfg, system, processes),
    )
    if reference is not None:
        results.add(
            "limited-drain", "rota", UNCONSTRAINED, reference.jobs_per_s, **reference.as_dict()
        )
    samplers: list[KeySampler] = []

    def watch(url: str) -> contextlib.AbstractContextManager[object]:
        samplers.append(KeySampler(url))
        return samplers[-1].running()

    async def prefill(url: str, total: int) -> None:
        await rota_runner.prefill_keyed(url, total, KEYS, KEY_LIMIT)

    result = results.attempt(
        "limited-drain",
        "rota",
        LIMITED,
        lambda: scenarios.pg_drain_once(cfg, system, processes, prefill=prefill, watch=watch),
    )
    if result is not None:
        sampler = samplers[-1]
        results.add(
            "limited-drain",
            "rota",
            LIMITED,
            result.jobs_per_s,
            **result.as_dict(),
            keys=KEYS,
            key_limit=KEY_LIMIT,
            max_per_key=sampler.max_per_key,
            max_in_flight=sampler.max_total,
            samples=sampler.samples,
            busy_samples=sampler.busy_samples,
        )
