"""(e) rota's sustained throughput: two worker processes on a queue that never runs dry,
for N minutes; jobs/s in the first window vs the last.

The producer lives in the parent: whenever fewer than LOW_WATER runs are unfinished it
enqueues REFILL more (one COPY). Completed runs are counted as enqueued - unfinished,
because counting succeeded rows in a table of millions would itself be the bottleneck.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import psycopg

from bench import pg, rota_runner
from bench.config import BenchConfig
from bench.cpu import ServerCpu
from bench.procs import WorkerGroup
from bench.results import Results, run_async, say
from bench.sustain_windows import Sample, largest_sizes, window, window_rate
from bench.systems import RotaWorkerSettings, rota_system

LOW_WATER = 20_000
REFILL = 20_000
SAMPLE_S = 0.5
# Waiting and held runs counted apart: each is then one index read (the state index
# leaves held runs out, ADR 0025; held ones are in rota_runs_leased).
UNFINISHED_COUNT_SQL = (
    "SELECT (SELECT count(*) FROM rota_runs WHERE state IN ('pending', 'retrying'))"
    " + (SELECT count(*) FROM rota_runs WHERE state IN ('claimed', 'running'))"
)
# The queue table (ADR 0027: rota_runs is the view over it and history), whose size
# must stay flat however many runs went through it.
TABLE_STATS_SQL = (
    "SELECT n_live_tup, n_dead_tup, pg_total_relation_size('rota_runs_live'),"
    " vacuum_count + autovacuum_count, autovacuum_count, current_setting('autovacuum')"
    " FROM pg_stat_user_tables WHERE relname = 'rota_runs_live'"
)


TABLE_BYTES_SQL = "SELECT pg_total_relation_size('rota_runs_live')"
TABLE_EVERY_S = 10.0  # the queue table's size is read this often


async def _feed_and_sample(
    url: str, seconds: float, group: WorkerGroup, enqueued: int
) -> list[Sample]:
    """Keep the queue fed for ``seconds``, sampling progress and CPU every SAMPLE_S."""
    app = rota_runner.make_app(url)
    samples: list[Sample] = []
    backends = pg.Probe(url)  # the database under test's backends are its server cost
    server_cpu = ServerCpu(backends.backend_pids)
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await app.store()
        started = time.monotonic()
        server_cpu.start()
        producer_start = time.process_time()
        table_read_at = -TABLE_EVERY_S
        try:
            while (elapsed := time.monotonic() - started) < seconds:
                group.check_errors()
                row = await (await conn.execute(UNFINISHED_COUNT_SQL)).fetchone()
                unfinished = int(row[0]) if row else 0
                table_bytes = None
                if elapsed - table_read_at >= TABLE_EVERY_S:
                    size = await (await conn.execute(TABLE_BYTES_SQL)).fetchone()
                    table_bytes, table_read_at = (int(size[0]) if size else None), elapsed
                server_cpu.sample()
                samples.append(
                    Sample(
                        elapsed,
                        enqueued - unfinished,
                        server_cpu.so_far() or 0.0,
                        time.process_time() - producer_start,
                        table_bytes,
                    )
                )
                if unfinished < LOW_WATER:
                    await app.enqueue_many_async(rota_runner.noop_jobs(REFILL))
                    enqueued += REFILL
                await asyncio.sleep(max(0.0, SAMPLE_S - (time.monotonic() - started - elapsed)))
        finally:
            await app.aclose()
            backends.close()
    return samples


def sustain_once(cfg: BenchConfig, worker: RotaWorkerSettings) -> dict[str, Any]:
    system = rota_system(worker)
    seconds = cfg.sustain_minutes * 60
    span = cfg.sustain_window_s
    with (
        pg.stock_autovacuum(cfg.admin_url) as server_had,
        pg.fresh_database(cfg.admin_url, "sustain") as url,
    ):
        run_async(rota_runner.install(url), 120)
        run_async(rota_runner.prefill(url, REFILL), 120)
        kwargs = [system.worker_kwargs(url, i) for i in range(cfg.sustain_workers)]
        with WorkerGroup(rota_runner.drain_worker, kwargs, system.loop) as group:
            group.start()
            group.go()
            samples = run_async(_feed_and_sample(url, seconds, group, REFILL), seconds + 120)
            group.stop()
            reports = group.collect(timeout=90)
        with pg.Probe(url) as probe:
            table_stats = probe.row(TABLE_STATS_SQL)
    first = window(samples, 0.0, span)
    last = window(samples, seconds - span, seconds)
    step = 10 if seconds >= 120 else 2  # a point every 10 s, or every 2 s in a smoke run
    series = [
        (t, round(window_rate(samples, t - step, t), 1))
        for t in range(step, int(seconds) + 1, step)
    ]
    live, dead, size, vacuums, autovacuums, autovacuum = table_stats or (None,) * 6
    if server_had != "on":
        say(f"autovacuum was {server_had} on this server: on for this scenario, then back")
    return {
        "first_window_jobs_per_s": first["jobs_per_s"],
        "last_window_jobs_per_s": last["jobs_per_s"],
        "first_window": first,
        "last_window": last,
        "window_s": span,
        "seconds": seconds,
        "done": samples[-1].done,
        "series": series,
        "series_step_s": step,
        "table_live_rows": live,
        "table_dead_rows": dead,
        "table_bytes": size,
        "table_mib_by_window": largest_sizes(samples, span),
        "table_vacuums": vacuums,
        "table_autovacuums": autovacuums,
        "server_autovacuum": autovacuum,
        "server_autovacuum_before": server_had,
        "warnings": _merged_warnings(reports.values()),
    }


def _merged_warnings(reports: Any) -> dict[str, int]:
    merged: dict[str, int] = {}
    for report in reports:
        for message, count in report.get("warnings", {}).items():
            merged[message] = merged.get(message, 0) + count
    return merged


def sustain(cfg: BenchConfig, results: Results, worker: RotaWorkerSettings) -> None:
    variant = f"{cfg.sustain_workers} processes, {cfg.sustain_minutes:g} min"
    stats = results.attempt("sustain", "rota", variant, lambda: sustain_once(cfg, worker))
    if stats is not None:
        ratio = stats["last_window_jobs_per_s"] / stats["first_window_jobs_per_s"]
        results.add("sustain", "rota", variant, ratio, unit="last/first", **stats)
