"""``python -m bench.server_cost [--jobs N] [--repeats N] [--breaker] [--write]``

What one completed run costs the PostgreSQL server, rota beside PgQueuer: statements,
WAL records and bytes, heap rows written, HOT updates, dead tuples and index entries,
each divided by the runs drained. These are counts, not timings, so a busy shared
machine does not move them (batch sizes do, a little: a worker that claims fewer runs
per statement sends more statements).

Each system drains the same pre-enqueued no-op runs in a fresh database with 2 worker
processes at the settings the headline drain uses (bench.systems). Sources, all per
database, so other sessions on the server do not pollute them:

- ``pg_stat_statements`` filtered by the database's oid: calls (BEGIN/COMMIT count:
  they are round trips too), WAL records, full-page images and bytes. The probe that
  watches for the end tags its query and is left out. WAL written by background work
  (autovacuum, checkpoints) is not in it.
- ``pg_stat_user_tables``: rows inserted / updated / HOT-updated / deleted, dead tuples.
- ``pageinspect``: entries in every B-tree's leaf pages before and after the drain. To
  keep VACUUM from removing entries while they are counted, autovacuum is switched off
  on the measured tables for this measurement only (a per-table setting in a throwaway
  database). B-tree bottom-up deletion can still drop some dead duplicates during the
  drain, so the index counts are a lower bound.

``--breaker`` puts rota's handler under an enabled breaker that stays closed (what a
closed breaker adds per run). ``--write`` replaces the section between the server-cost
markers in docs/benchmarks.md (``make bench`` runs this after the main bench, which
rewrites the rest of the file).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench import pg, sections
from bench.config import BenchConfig
from bench.drain import DrainSpec, run_drain
from bench.results import run_async, say

if TYPE_CHECKING:
    from bench.scenarios import Prefill
    from bench.systems import System

REPORT = sections.REPORT
START, END = sections.markers("bench.server_cost")
TAG = "/* bench.server_cost probe */ "
PROCESSES = 2
SETUP_TIMEOUT_S = 120.0
STATS_SETTLE_S = 10.0  # backends flush their table counters at exit; wait for that

STATEMENTS_SQL = (
    TAG
    + """
SELECT queryid, min(query), sum(calls), sum(rows), sum(wal_records), sum(wal_fpi),
       sum(wal_bytes), sum(total_exec_time)
FROM pg_stat_statements
WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND query NOT LIKE '%%bench.server_cost%%'
GROUP BY queryid
"""
)
TABLES_SQL = (
    TAG
    + """
SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del, n_dead_tup
FROM pg_stat_user_tables
"""
)
BTREES_SQL = (
    TAG
    + """
SELECT c.oid::regclass::text, t.relname
FROM pg_index i
JOIN pg_class c ON c.oid = i.indexrelid
JOIN pg_class t ON t.oid = i.indrelid
JOIN pg_am am ON am.oid = c.relam
WHERE am.amname = 'btree' AND t.relnamespace NOT IN (
    'pg_catalog'::regnamespace, 'information_schema'::regnamespace, 'pg_toast'::regnamespace)
"""
)
# Heap pointers, not leaf items: deduplication packs equal keys into one posting list.
LEAF_ITEMS_SQL = (
    TAG
    + """
SELECT coalesce(sum(coalesce(cardinality(i.tids), 1)), 0)
FROM generate_series(1, (pg_relation_size(%s::regclass)
                         / current_setting('block_size')::int)::int - 1) AS b,
     LATERAL bt_page_stats(%s, b) AS s,
     LATERAL bt_page_items(%s, b) AS i
WHERE s.type = 'l' AND (s.btpo_next = 0 OR i.itemoffset > 1)
"""
)


@dataclass(frozen=True)
class Snapshot:
    statements: dict[int, tuple[str, list[float]]]
    tables: dict[str, list[float]]
    index_entries: dict[str, int]
    index_table: dict[str, str]


def _snapshot(probe: pg.Probe) -> Snapshot:
    statements = {
        int(str(r[0])): (str(r[1]), [float(str(v)) for v in r[2:]])
        for r in probe.rows(STATEMENTS_SQL)
    }
    tables = {str(r[0]): [float(str(v)) for v in r[1:]] for r in probe.rows(TABLES_SQL)}
    entries: dict[str, int] = {}
    owner: dict[str, str] = {}
    for name, table in probe.rows(BTREES_SQL):
        owner[str(name)] = str(table)
        entries[str(name)] = probe.scalar(LEAF_ITEMS_SQL, (name, name, name))
    return Snapshot(statements, tables, entries, owner)


def _settled_tables(probe: pg.Probe) -> dict[str, list[float]]:
    """Table counters once the workers' backends have flushed them (at their exit)."""
    deadline = time.monotonic() + STATS_SETTLE_S
    last: dict[str, list[float]] | None = None
    while time.monotonic() < deadline:
        probe.execute(TAG + "SELECT pg_stat_clear_snapshot()")
        now = {str(r[0]): [float(str(v)) for v in r[1:]] for r in probe.rows(TABLES_SQL)}
        if now == last:
            return now
        last = now
        time.sleep(0.5)
    return last or {}


def _statements_counted(admin_url: str) -> bool:
    """Whether the server loads pg_stat_statements (a restart-only setting)."""
    with pg.Probe(admin_url) as probe:
        row = probe.row("SELECT current_setting('shared_preload_libraries')")
    return row is not None and "pg_stat_statements" in str(row[0])


def measure(cfg: BenchConfig, system: System, prefill: Prefill | None = None) -> dict[str, Any]:
    """One drain of ``cfg.jobs`` runs; the server's work per run. ``prefill`` replaces
    the system's own (``--breaker``: the handler under a closed breaker)."""
    with pg.fresh_database(cfg.admin_url, "cost") as url:
        run_async(system.module.install(url), SETUP_TIMEOUT_S)
        run_async((prefill or system.module.prefill)(url, cfg.jobs), SETUP_TIMEOUT_S)
        with pg.Probe(url) as probe:
            probe.execute(TAG + "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            probe.execute(TAG + "CREATE EXTENSION IF NOT EXISTS pageinspect")
            for (table,) in probe.rows(TAG + "SELECT relname FROM pg_stat_user_tables"):
                probe.execute(TAG + f'ALTER TABLE "{table}" SET (autovacuum_enabled = off)')
            time.sleep(1.0)  # let the prefill's own counters reach the stats first
            before = replace(_snapshot(probe), tables=_settled_tables(probe))
            spec = DrainSpec(
                system.module.drain_worker,
                [system.worker_kwargs(url, i) for i in range(PROCESSES)],
                lambda: pg.Probe(url),
                TAG + system.module.UNFINISHED_SQL,
                loop=system.loop,
                timeout_s=cfg.scenario_timeout_s,
            )
            drained = run_drain(spec, cfg.jobs)
            after = replace(_snapshot(probe), tables=_settled_tables(probe))
            succeeded = probe.scalar(system.module.SUCCEEDED_SQL)
    if succeeded != cfg.jobs:
        raise RuntimeError(f"{system.name}: {succeeded} of {cfg.jobs} recorded as succeeded")
    return _per_run(before, after, cfg.jobs) | {"jobs_per_s": drained.jobs_per_s}


def _per_run(before: Snapshot, after: Snapshot, jobs: int) -> dict[str, Any]:
    calls = rows = wal_records = wal_fpi = wal_bytes = exec_ms = 0.0
    top: list[tuple[float, str, float, float, float]] = []
    for queryid, (text, values) in after.statements.items():
        old = before.statements.get(queryid, (text, [0.0] * len(values)))[1]
        d = [a - b for a, b in zip(values, old, strict=True)]
        if d[0] <= 0:
            continue
        calls += d[0]
        rows += d[1]
        wal_records += d[2]
        wal_fpi += d[3]
        wal_bytes += d[4]
        exec_ms += d[5]
        top.append((d[0], " ".join(text.split())[:90], d[1], d[4], d[5]))
    tables: dict[str, dict[str, float]] = {}
    for table, values in after.tables.items():
        old = before.tables.get(table, [0.0] * len(values))
        ins, upd, hot, dele, dead = (a - b for a, b in zip(values, old, strict=True))
        if ins or upd or dele:
            tables[table] = {"ins": ins, "upd": upd, "hot": hot, "del": dele, "dead": dead}
    indexes = {
        name: after.index_entries[name] - before.index_entries.get(name, 0)
        for name in after.index_entries
    }
    top.sort(reverse=True)
    return {
        "statements": calls / jobs,
        "rows_returned_or_written": rows / jobs,
        "wal_records": wal_records / jobs,
        "wal_fpi": wal_fpi / jobs,
        "wal_bytes": wal_bytes / jobs,
        "exec_us": exec_ms * 1000 / jobs,
        "heap_inserts": sum(t["ins"] for t in tables.values()) / jobs,
        "heap_updates": sum(t["upd"] for t in tables.values()) / jobs,
        "hot_updates": sum(t["hot"] for t in tables.values()) / jobs,
        "heap_deletes": sum(t["del"] for t in tables.values()) / jobs,
        "dead_tuples": sum(t["dead"] for t in tables.values()) / jobs,
        "index_entries": sum(v for v in indexes.values() if v > 0) / jobs,
        "tables": tables,
        "indexes": {k: v / jobs for k, v in indexes.items() if v},
        "index_table": after.index_table,
        "top": [
            {"calls_per_run": c / jobs, "query": q, "rows": r, "wal_bytes": w, "ms": t}
            for c, q, r, w, t in top[:6]
        ],
    }


ROWS = (
    ("statements", "statements (round trips, BEGIN/COMMIT included)", 2),
    ("wal_records", "WAL records", 1),
    ("wal_bytes", "WAL bytes (statements only)", 0),
    ("wal_fpi", "of which full-page images", 2),
    ("heap_inserts", "heap rows inserted", 2),
    ("heap_updates", "heap rows updated", 2),
    ("hot_updates", "of which HOT", 2),
    ("heap_deletes", "heap rows deleted", 2),
    ("dead_tuples", "dead tuples left", 2),
    ("index_entries", "B-tree entries added (lower bound)", 2),
    ("exec_us", "statement execution time, µs (noisy: a timing)", 1),
)


def render(measured: dict[str, list[dict[str, Any]]], cfg: BenchConfig) -> str:
    names = list(measured)
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load = os.getloadavg()[0]
    lines = [
        START,
        "### What one completed run costs the server (bench.server_cost)",
        "",
        f"`python -m bench.server_cost --jobs {cfg.jobs} --repeats {cfg.repeats}`, run on "
        f"{stamp} ({os.cpu_count()} shared cores, 1-minute load {load:.1f} at the end).",
        f"{cfg.jobs:,} pre-enqueued no-op runs drained by {PROCESSES} worker processes in a",
        "fresh database; everything per completed run, median of the repeats. Counts, not",
        "timings: the busy machine moves them little (batch sizes do). Sources: per-database",
        "pg_stat_statements, pg_stat_user_tables and B-tree leaf pages (pageinspect); see",
        "the module docstring for what each misses.",
        "",
        "| per completed run | " + " | ".join(names) + " |",
        "| --- |" + " ---: |" * len(names),
    ]
    for key, label, digits in ROWS:
        cells = [f"{statistics.median(r[key] for r in measured[n]):,.{digits}f}" for n in names]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    speed = [f"{statistics.median(r['jobs_per_s'] for r in measured[n]):,.0f}" for n in names]
    lines.append("| drain jobs/s during the count (noisy) | " + " | ".join(speed) + " |")
    for name in names:
        last = measured[name][-1]
        lines += ["", f"{name}, where it goes (last repeat):", ""]
        for table, t in sorted(last["tables"].items()):
            per = {k: v / cfg.jobs for k, v in t.items()}
            owned = sorted(
                (
                    i
                    for i, tab in last["index_table"].items()
                    if tab == table and i in last["indexes"]
                ),
            )
            entries = ", ".join(f"{i} {last['indexes'][i]:.2f}" for i in owned)
            lines.append(
                f"- `{table}`: {per['ins']:.2f} inserted, {per['upd']:.2f} updated "
                f"({per['hot']:.2f} HOT), {per['del']:.2f} deleted; "
                f"index entries: {entries or 'none'}"
            )
        for s in last["top"]:
            lines.append(
                f"- {s['calls_per_run']:.3f} calls/run, {s['wal_bytes'] / cfg.jobs:.0f} WAL B/run, "
                f"{s['ms'] * 1000 / cfg.jobs:.1f} µs/run: "
                f"`{s['query']}`"
            )
    lines.append(END)
    return "\n".join(lines) + "\n"


def systems(args: argparse.Namespace, label: str) -> list[System]:
    from bench.systems import PGQUEUER, RotaWorkerSettings, rota_system

    rota = replace(rota_system(RotaWorkerSettings(concurrency=args.concurrency)), name=label)
    return [rota] if args.no_peer else [rota, PGQUEUER]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.server_cost")
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=200, help="rota's, per process")
    parser.add_argument("--rev", help="measure this git revision's src/rota (bench.ab)")
    parser.add_argument("--no-peer", action="store_true", help="rota only")
    parser.add_argument(
        "--breaker",
        action="store_true",
        help="rota's handler under an enabled breaker that stays closed (bench.rates)",
    )
    parser.add_argument("--admin-url", default=pg.ADMIN_URL)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args(argv)
    label = "rota"
    with tempfile.TemporaryDirectory(prefix="rota-cost-") as tmp:
        if args.rev:  # before anything imports rota
            from bench.ab import checkout
            from bench.snapshot import pin_rota_source

            side = checkout(args.rev, Path(tmp))
            pin_rota_source(side.source)
            label = f"rota {side.commit}"
        else:
            from bench.snapshot import pin_rota_source

            pin_rota_source()
        return _run(args, label)


def _run(args: argparse.Namespace, label: str) -> int:
    from bench import rates  # imports rota: only once its source is pinned

    cfg = replace(BenchConfig(admin_url=args.admin_url), jobs=args.jobs, repeats=args.repeats)
    if not _statements_counted(cfg.admin_url):
        # A stock server does not load it, and loading it takes a restart: said in the
        # report (make bench goes on to its next part), not a crash.
        text = "\n".join(
            [
                START,
                "### What one completed run costs the server (bench.server_cost)",
                "",
                "Not measured in this run: this server does not load `pg_stat_statements` "
                "(`shared_preload_libraries`), which the statement and WAL counts come "
                "from. To measure: `ALTER SYSTEM SET shared_preload_libraries = "
                "'pg_stat_statements'`, restart PostgreSQL, run `python -m "
                "bench.server_cost --write`.",
                END,
            ]
        )
        say("server cost: not measured (pg_stat_statements is not loaded on this server)")
        if args.write:
            sections.replace_section(text, START, END, REPORT)
        return 0
    measured: dict[str, list[dict[str, Any]]] = {}
    chosen = systems(args, label + (", closed breaker" if args.breaker else ""))
    for repeat in range(cfg.repeats):
        # The order rotates between repeats, so neither system always goes first.
        order = chosen[repeat % len(chosen) :] + chosen[: repeat % len(chosen)]
        for system in order:
            say(f"server cost / {system.name} / repeat {repeat + 1}")
            breaker = args.breaker and system.name.startswith("rota")
            prefill = rates.prefill_closed_breaker if breaker else None
            measured.setdefault(system.name, []).append(measure(cfg, system, prefill))
    text = render({s.name: measured[s.name] for s in chosen}, cfg)
    print(text)
    if args.write:
        sections.replace_section(text, START, END, REPORT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
