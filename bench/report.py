"""docs/benchmarks.md from a run's Results: targets, tables of medians, settings, machine.

Everything in the file comes from the Results (and bench/analysis.md, a hand-written
reading of a specific run, included verbatim with its own date), so re-running the bench
rewrites every number.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import report_issues
from bench.chart import Bar, write_chart
from bench.claimsize import claimsize_lines
from bench.dashboard import dashboard_lines
from bench.memory import memory_lines, memory_target
from bench.rates import rates_lines, rates_targets
from bench.results import Results, Summary
from bench.results import fmt as _fmt
from bench.retire_report import retire_lines
from bench.sustain_windows import sustain_targets
from bench.webhooks import webhook_lines

SYSTEMS = ("rota", "PgQueuer", "Procrastinate")

DEFAULTS_NOTE = ", defaults"  # bench.systems: a variant measured as the system ships
ANALYSIS = Path(__file__).with_name("analysis.md")


def _cell(summary: Summary | None, digits: int = 0, failed: bool = False) -> str:
    if summary is None:
        return "**failed**" if failed else "—"
    if summary.count == 1:
        return _fmt(summary.median, digits)
    return (
        f"**{_fmt(summary.median, digits)}** "
        f"({_fmt(summary.low, digits)}..{_fmt(summary.high, digits)})"
    )


def _ratio(a: Summary | None, b: Summary | None) -> str:
    return "—" if a is None or b is None or b.median == 0 else f"{a.median / b.median:.2f}x"


def _variants(results: Results, scenario: str) -> list[str]:
    seen: list[str] = []
    for r in results.records + results.failures:
        if r["scenario"] == scenario and r["variant"] not in seen:
            seen.append(r["variant"])
    return seen


def _failed(results: Results, scenario: str, system: str, variant: str) -> bool:
    return any(
        (f["scenario"], f["system"], f["variant"]) == (scenario, system, variant)
        for f in results.failures
    )


def _summary(results: Results, scenario: str, system: str, variant: str) -> Summary | None:
    return Summary.of(results.values(scenario, system, variant))


def _comparison_table(results: Results, scenario: str) -> list[str]:
    lines = [
        "| variant | rota | PgQueuer | Procrastinate | rota / PgQueuer | rota / Procrastinate |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for variant in _variants(results, scenario):
        s = {name: _summary(results, scenario, name, variant) for name in SYSTEMS}
        cells = [
            _cell(s[name], failed=_failed(results, scenario, name, variant)) for name in SYSTEMS
        ]
        lines.append(
            f"| {variant} | {' | '.join(cells)} | {_ratio(s['rota'], s['PgQueuer'])} | "
            f"{_ratio(s['rota'], s['Procrastinate'])} |"
        )
    return lines


def _records(results: Results, scenario: str) -> list[dict[str, Any]]:
    return [r for r in results.records if r["scenario"] == scenario]


def _target_rows(results: Results) -> list[str]:
    """The issue's targets, each judged on this run's medians."""
    rows = ["| target | measured in this run | reached? |", "|---|---|---|"]

    def row(target: str, measured: str, ok: bool | None) -> None:
        verdict = "not measured" if ok is None else ("**reached**" if ok else "**not reached**")
        rows.append(f"| {target} | {measured} | {verdict} |")

    drains = {
        v: (_summary(results, "drain", "rota", v), _summary(results, "drain", "PgQueuer", v))
        for v in _variants(results, "drain")
        if not v.endswith(DEFAULTS_NOTE)
    }
    _defaults_rows(results, row, drains)
    for variant, (ours, theirs) in drains.items():
        ok = None if ours is None or theirs is None else ours.median >= 1.2 * theirs.median
        row(
            f"drain ≥ 1.2x PgQueuer ({variant})",
            f"rota {_fmt(ours and ours.median)} vs PgQueuer {_fmt(theirs and theirs.median)} "
            f"jobs/s = {_ratio(ours, theirs)}",
            ok,
        )
    p99 = _latency_summary(results, "rota", "p99_ms")
    p50 = _latency_summary(results, "rota", "p50_ms")
    row(
        "pickup p99 ≤ 6 ms (50 runs/s, one idle worker)",
        f"rota p99 {_cell(p99, 1)} ms over {p99.count} run(s) of {_latency_setup(results)} "
        f"(p50 {_cell(p50, 1)} ms)"
        if p99 and p50
        else "—",
        None if p99 is None else p99.median <= 6,
    )
    after_idle = _latency_summary(results, "rota", "after_idle_ms")
    row(
        "first run after idle no slower than the rest (≤ pickup p99)",
        f"rota after 3 s idle {_cell(after_idle, 1)} ms vs p99 {_cell(p99, 1)} ms"
        if after_idle and p99
        else "—",
        None if after_idle is None or p99 is None else after_idle.median <= p99.median,
    )
    enqueue = [(v, _summary(results, "enqueue", "rota", v)) for v in _variants(results, "enqueue")]
    enqueue = [(v, s) for v, s in enqueue if s is not None]
    best = max(enqueue, key=lambda vs: vs[1].median, default=None)
    row(
        "bulk enqueue ≥ 150k runs/s",
        f"rota best {_fmt(best[1].median)} runs/s ({best[0]})" if best else "—",
        None if best is None else best[1].median >= 150_000,
    )
    sqlite = [
        (v, _summary(results, "sqlite-drain", "rota (SQLite)", v))
        for v in _variants(results, "sqlite-drain")
    ]
    sqlite = [(v, s) for v, s in sqlite if s is not None]
    best_sqlite = max(sqlite, key=lambda vs: vs[1].median, default=None)
    row(
        "SQLite drain ≥ 20k runs/s (must not regress)",
        f"best {_fmt(best_sqlite[1].median)} runs/s ({best_sqlite[0]})" if best_sqlite else "—",
        None if best_sqlite is None else best_sqlite[1].median >= 20_000,
    )
    for target in sustain_targets(results):
        row(*target)
    row("worker memory < 80 MiB, no growth", *memory_target(results))
    for target in rates_targets(results):
        row(*target)
    report_issues.target_rows(results, row)
    return rows


def _defaults_rows(
    results: Results,
    row: Callable[[str, str, bool | None], None],
    best: dict[str, tuple[Summary | None, Summary | None]],
) -> None:
    """Issue 15's "defaults are fast": rota as shipped against PgQueuer at its best, and
    within 15% of rota's own best, per worker count."""
    for variant, (rota_best, pgq_best) in best.items():
        shipped = _summary(results, "drain", "rota", variant + DEFAULTS_NOTE)
        if shipped is None:
            continue
        ok = None if pgq_best is None else shipped.median >= pgq_best.median
        row(
            f"defaults: rota as shipped ≥ PgQueuer at its best ({variant})",
            f"rota defaults {_fmt(shipped.median)} vs PgQueuer best "
            f"{_fmt(pgq_best and pgq_best.median)} jobs/s = {_ratio(shipped, pgq_best)}",
            ok,
        )
        close = None if rota_best is None else shipped.median >= 0.85 * rota_best.median
        row(
            f"defaults: rota as shipped within 15% of rota at its best ({variant})",
            f"{_fmt(shipped.median)} vs {_fmt(rota_best and rota_best.median)} jobs/s = "
            f"{_ratio(shipped, rota_best)}",
            close,
        )


def _drain_cpu_rows(results: Results) -> list[str]:
    rows = [
        "| system | variant | wall s | worker CPU s | server CPU s | worker CPU µs/job |"
        " server CPU µs/job |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for scenario in ("drain", "drain-analyzed", "sqlite-drain"):
        groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for r in _records(results, scenario):
            groups.setdefault((r["system"], r["variant"]), []).append(r)
        for (system, variant), recs in groups.items():
            mid = sorted(recs, key=lambda r: r["value"])[len(recs) // 2]  # the median repeat
            # SQLite runs inside the worker processes: there is no server to measure.
            server = None if scenario == "sqlite-drain" else mid.get("server_cpu_s")
            per_job = 1e6 / mid["jobs"]
            rows.append(
                f"| {system} | {variant} | {mid['seconds']:.2f} | {mid['workers_cpu_s']:.2f} | "
                f"{_fmt(server, 2)} | {mid['workers_cpu_s'] * per_job:.0f} | "
                f"{_fmt(None if server is None else server * per_job)} |"
            )
    return rows


def _profile_lines(results: Results) -> list[str]:
    profiles = _records(results, "profile")
    if not profiles:
        return ["(no profile in this run)"]
    p = profiles[0]
    shares = ", ".join(f"{name} {share:.0%}" for name, share in p["by_package"].items())
    lines = [
        f"One worker process ({p['variant']}) drained {p['jobs']:,} runs at "
        f"{p['jobs_per_s']:,.0f} jobs/s under the profiler; {p['total_s']:.2f} s of "
        f"profiled self time, by package: {shares}.",
        "",
        "| function | calls | self s | cumulative s | share of self time |",
        "|---|---:|---:|---:|---:|",
    ]
    lines += [
        f"| `{t['function']}` | {t['calls']:,} | {t['self_s']:.3f} | {t['cum_s']:.3f} | "
        f"{t['share']:.1%} |"
        for t in p["top_self"]
    ]
    return lines


def _latency_setup(results: Results) -> str:
    cfg = results.meta.get("config", {})
    return f"{cfg.get('latency_seconds', '?'):g} s at {cfg.get('latency_rate', '?'):g} jobs/s"


def _latency_summary(results: Results, system: str, key: str) -> Summary | None:
    return Summary.of(
        [r[key] for r in _records(results, "latency") if r["system"] == system and key in r]
    )


def _latency_rows(results: Results) -> list[str]:
    rows = [
        "| system | p50 ms | p99 ms | worst ms (all runs) | jobs per run "
        "| first job ms | after 3 s idle ms (worst of 3) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for system in SYSTEMS:
        records = [r for r in _records(results, "latency") if r["system"] == system]
        if not records:
            continue
        rows.append(
            f"| {system} | {_cell(_latency_summary(results, system, 'p50_ms'), 2)} | "
            f"{_cell(_latency_summary(results, system, 'p99_ms'), 2)} | "
            f"{max(r['max_ms'] for r in records):.2f} | {records[0]['samples']} | "
            f"{_cell(_latency_summary(results, system, 'first_ms'), 2)} | "
            f"{_cell(_latency_summary(results, system, 'after_idle_ms'), 2)} |"
        )
    return rows


def _sqlite_rows(results: Results) -> list[str]:
    rows = ["| variant | rota on SQLite, jobs/s | rota on PostgreSQL, jobs/s |", "|---|---:|---:|"]
    for variant in _variants(results, "sqlite-drain"):
        rows.append(
            f"| {variant} | {_cell(_summary(results, 'sqlite-drain', 'rota (SQLite)', variant))} "
            f"| {_cell(_summary(results, 'drain', 'rota', variant))} |"
        )
    return rows


def _mib(size: int | None) -> str:
    return "—" if size is None else _fmt(size / 2**20)


def _sustain_lines(results: Results) -> list[str]:
    records = _records(results, "sustain")
    if not records:
        return ["(not measured in this run)"]
    s = records[0]
    first, last = s.get("first_window", {}), s.get("last_window", {})
    lines = [
        f"{s['variant']}: {s['done']:,} runs done; first {s['window_s']:g} s window "
        f"**{s['first_window_jobs_per_s']:,.0f} jobs/s**, last window "
        f"**{s['last_window_jobs_per_s']:,.0f} jobs/s**, ratio **{s['value']:.2f}**. "
        "At the end the queue table (rota_runs_live) held "
        f"{_fmt(s.get('table_live_rows'))} live and "
        f"{_fmt(s.get('table_dead_rows'))} dead rows "
        f"({_fmt((s.get('table_bytes') or 0) / 2**20)} MiB with indexes) and had been "
        f"vacuumed {_fmt(s.get('table_vacuums'))} times "
        f"({_fmt(s.get('table_autovacuums'))} of them by autovacuum, which was "
        f"{_autovacuum_said(s)}). The producer (one COPY of 20,000 "
        "runs whenever fewer than 20,000 are unfinished) runs in the bench's parent process "
        "on the same CPUs.",
    ]
    if first and last:
        lines += [
            "",
            "| window | jobs/s | server CPU µs/job | producer CPU µs/job | queue table MiB "
            "(largest read) |",
            "|---|---:|---:|---:|---:|",
            *(
                f"| {name} | {_fmt(w['jobs_per_s'])} | {_fmt(w['server_cpu_us_per_job'])} | "
                f"{_fmt(w['producer_cpu_us_per_job'])} | {_mib(w.get('table_bytes_max'))} |"
                for name, w in (("first", first), ("last", last))
            ),
        ]
    by_window = s.get("table_mib_by_window")
    if by_window:
        lines += [
            "",
            f"The queue table's largest size read in each {s['window_s']:g} s of the run: "
            + ", ".join("—" if mib is None else f"{mib:g}" for mib in by_window)
            + " MiB.",
        ]
    return lines


def _autovacuum_said(s: dict[str, Any]) -> str:
    during, before = s.get("server_autovacuum"), s.get("server_autovacuum_before")
    if before is not None and before != during:
        return f"{during}, at its stock settings, for this scenario (the server has it {before})"
    return f"{during or '?'} on the server"


def _sweep_rows(results: Results) -> list[str]:
    rows = ["| rota worker setting (2-process drain, measured once each) | jobs/s |", "|---|---:|"]
    rows += [f"| {r['variant']} | {r['value']:,.0f} |" for r in _records(results, "sweep")]
    return rows


def _settings_lines(results: Results) -> list[str]:
    meta = results.meta
    lines = [
        f"- **{name}** {meta['versions'].get(name, '?')}: {meta['settings'].get(name, '')}"
        for name in SYSTEMS
    ]
    lines += [
        f'- ({name}, rows marked "defaults") {text}'
        for name, text in meta.get("default_settings", {}).items()
    ]
    lines.append(
        f"- rota worker setting used everywhere else: **{meta.get('rota_worker', '?')}** "
        "(the fastest in the sweep below)."
    )
    return lines


def _machine_lines(results: Results) -> list[str]:
    m = results.meta
    pg_settings = ", ".join(f"{k}={v}" for k, v in m.get("postgresql_settings", {}).items())
    return [
        f"- date: {m.get('date')}; rota revision {m.get('rota_revision')}; measured: "
        f"{m.get('rota_source', '?')}",
        f"- `nproc`: {m.get('nproc')} ({m.get('cpu')}), {m.get('memory_gb')} GiB RAM, "
        f"{m.get('os')}, Python {m.get('python')}",
        f"- PostgreSQL {m.get('postgresql')} on 127.0.0.1 (loopback), {pg_settings}",
        f"- load average at start {m.get('load_average_at_start')}, at end "
        f"{m.get('load_average_at_end', '?')} (other work on the machine shows up here)",
        f"- run: {m.get('command', 'python -m bench')}, {m.get('elapsed_min', '?')} min",
    ]


def _failure_lines(results: Results) -> list[str]:
    lines = (
        [
            f"- {f['scenario']} / {f['system']} / {f['variant']}: `{f['error']}`"
            for f in results.failures
        ]
        if results.failures
        else ["None: every measurement finished within its deadline and checked out."]
    )
    warned = [r for r in results.records if r.get("warnings")]
    if warned:
        lines += ["", "Warnings the worker processes logged (counted, not printed):", ""]
        for r in warned:
            counts = "; ".join(f"{message} x{n:,}" for message, n in r["warnings"].items())
            lines.append(f"- {r['scenario']} / {r['system']} / {r['variant']}: {counts}")
    return lines


METHOD = """\
- Every measurement gets a fresh database created from `postgres` (or a fresh SQLite
  file) and dropped afterwards; each system installs its own schema in it.
- (a) The clock covers only the enqueue calls (connections are open, schema installed).
- (b, d) Jobs are enqueued first. Worker processes (spawned, one event loop each) import,
  connect and register their no-op handler, then report ready; the clock starts when all
  are released together and stops when a probe (every 20 ms, `SELECT ... LIMIT 1` on the
  unfinished states) finds nothing left. Afterwards the bench checks that exactly N jobs
  are recorded as succeeded (for rota also: exactly N attempt rows, i.e. no run executed
  twice). PgQueuer and Procrastinate stop by themselves (their drain modes); rota's
  workers are told to stop once the probe sees the queue empty.
- (c) One worker process idles on LISTEN/NOTIFY; the parent enqueues one job every 20 ms
  (fixed schedule) whose payload carries `time.time()`; the handler records
  start - enqueue. The enqueue round trip is inside the number, for every system alike.
- CPU: workers report `time.process_time()`; server CPU is read from /proc for the
  backends of the database under test only (`pg_stat_activity.datname`, sampled during
  the window; the probe's own backend and other databases' sessions left out, as are
  the server's background processes). On 2 cores, workers and server compete for the
  same CPUs.
- Order: each repeat of (a), (b) and (c) starts with the next system (rota, PgQueuer,
  Procrastinate; then PgQueuer, Procrastinate, rota; ...), so none always runs first
  or last.
- Medians over the repeats, with min..max in parentheses. Ratios are of medians."""


def write_report(results: Results, md_path: Path, png_path: Path) -> None:
    cfg = results.meta.get("config", {})
    enqueue_bars: list[Bar] = [
        ("enqueue", s, v)
        for v in _variants(results, "enqueue")
        for s in SYSTEMS
        if results.values("enqueue", s, v)
    ]
    drain_bars: list[Bar] = [("drain", s, v) for v in _variants(results, "drain") for s in SYSTEMS]
    drain_bars += [
        ("drain-analyzed", s, v) for v in _variants(results, "drain-analyzed") for s in SYSTEMS
    ]
    drain_bars += [("sqlite-drain", "rota (SQLite)", v) for v in _variants(results, "sqlite-drain")]
    drain_bars += [("limited-drain", "rota", v) for v in _variants(results, "limited-drain")]
    write_chart(results, png_path, enqueue_bars, drain_bars)
    analysis = ANALYSIS.read_text().strip() if ANALYSIS.exists() else "(none written)"
    parts = [
        "# Benchmarks: rota beside PgQueuer and Procrastinate",
        "",
        f"Measured in one run of `python -m bench` on {results.meta.get('date')}, all three "
        "against the same PostgreSQL server. This file and "
        f"[{png_path.name}]({png_path.name}) are generated; re-run `make bench` to refresh "
        f"them. Repeats: {cfg.get('repeats')} for (a), (b), (c), (d) and (f)"
        f"{' — QUICK SMOKE RUN, numbers are not representative' if cfg.get('quick') else ''}.",
        "",
        f"![chart]({png_path.name})",
        "",
        "## Targets from the issue",
        "",
        *_target_rows(results),
        "",
        "## (a) Bulk enqueue, jobs/s",
        "",
        *_comparison_table(results, "enqueue"),
        "",
        f"## (b) Drain {cfg.get('jobs', 0):,} pre-enqueued no-op jobs, jobs/s",
        "",
        *_comparison_table(results, "drain"),
        "",
        "The same 2-process drain once more (not repeated), after `ANALYZE` of the freshly "
        "filled tables, which is what autovacuum's auto-analyze does on a stock server soon "
        "after a bulk enqueue (autovacuum is off on this server, so the runs above plan "
        "without statistics):",
        "",
        *_comparison_table(results, "drain-analyzed"),
        "",
        "Where the CPU went (the median repeat of each):",
        "",
        *_drain_cpu_rows(results),
        "",
        "## (c) Enqueue-to-start latency",
        "",
        *_latency_rows(results),
        "",
        f"## (d) rota on SQLite, the same {cfg.get('jobs', 0):,}-job drain",
        "",
        *_sqlite_rows(results),
        "",
        "## (e) rota sustained throughput",
        "",
        *_sustain_lines(results),
        "",
        f"## (f) Issue 3: drain of {cfg.get('jobs', 0):,} runs under per-key limits",
        "",
        *report_issues.limited_lines(results),
        "",
        "## (g) Issues 4 and 25: schedules firing every minute, on PostgreSQL",
        "",
        *report_issues.cron_lines(results),
        "",
        "## (h) Issue 5: the HTTP API",
        "",
        *report_issues.api_lines(results),
        "",
        "## (i) Issue 11: what metrics cost",
        "",
        *report_issues.observability_lines(results),
        "",
        "## (j) Issue 12: the dashboard's pages",
        "",
        *dashboard_lines(results),
        "",
        "## (k) Issue 14: webhook delivery",
        "",
        *webhook_lines(results),
        "",
        "## (l) Issue 14: a drain under a rate limit, and a closed breaker's cost",
        "",
        *rates_lines(results),
        "",
        "## (n) Issue 15: a worker's memory",
        "",
        *memory_lines(results),
        "",
        "## (q) Issue 24: a claim's server cost grows with the runs it returns",
        "",
        *claimsize_lines(results),
        "",
        "## (r) Issue 24: dropping a day of history beside a drain",
        "",
        *retire_lines(results),
        "",
        "## What bounds it",
        "",
        *_profile_lines(results),
        "",
        analysis,
        "",
        "## Settings",
        "",
        *_settings_lines(results),
        "",
        *_sweep_rows(results),
        "",
        "## Machine",
        "",
        *_machine_lines(results),
        "",
        "## Method",
        "",
        METHOD,
        "",
        "## Failures",
        "",
        *_failure_lines(results),
        "",
    ]
    md_path.parent.mkdir(parents=True, exist_ok=True)
    md_path.write_text("\n".join(parts))
