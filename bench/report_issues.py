"""The report's parts for issues 3-5 and 25: (f) the key-limited drain, (g) 100,000
cron schedules, (h) the HTTP API. Their target rows, and those of issue 24 ((q) and (r),
whose sections live beside their scenarios), join the main table in bench.report."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bench.claimsize import claimsize_target
from bench.results import Results, Summary
from bench.retire_report import retire_target

Row = Callable[[str, str, bool | None], None]
KEY_LIMIT_TARGET = 0.7  # limited drain within 30% of the unconstrained one
CRON_DRAIN_SLACK_S = 0.1  # issue 25: start p99 within runs / drain rate + this
API_P99_TARGET_MS = 50.0


def _records(results: Results, scenario: str) -> list[dict[str, Any]]:
    return [r for r in results.records if r["scenario"] == scenario]


def _num(value: float | None, digits: int = 0) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def _limited(results: Results) -> tuple[Summary | None, Summary | None, list[dict[str, Any]]]:
    records = _records(results, "limited-drain")
    free = Summary.of([r["value"] for r in records if "keys" not in r])
    keyed_records = [r for r in records if "keys" in r]
    keyed = Summary.of([r["value"] for r in keyed_records])
    return free, keyed, keyed_records


def _cron(results: Results) -> dict[str, Any] | None:
    records = _records(results, "cron")
    return records[0] if records else None


def _drain_rate(results: Results) -> float | None:
    """rota's 2-process drain (b) of this run, median jobs/s: what bounds how fast a
    slot's runs, all due at once, can start."""
    values = results.values("drain", "rota", "2 processes")
    return Summary.of(values).median if values else None


def _drain_bound_s(results: Results, runs: int) -> float | None:
    rate = _drain_rate(results)
    return None if not rate else runs / rate + CRON_DRAIN_SLACK_S


def _before(slot: dict[str, Any]) -> bool:
    """All of the slot's runs were committed before it (seen by the bench's watcher)."""
    return "all_s" in slot and slot["all_s"] < 0


def _planning_s(slot: dict[str, Any]) -> float | None:
    """From the planner tick's ``now`` (every run's created_at) to the last commit."""
    return slot["all_s"] - slot["created_first_s"] if "all_s" in slot else None


def observability_lines(results: Results) -> list[str]:
    """(i) issue 11: the drain with metrics on and off, and the scrape time."""
    lines = ["| variant | jobs/s (median, min..max) | repeats |", "|---|---|---|"]
    for metrics in ("on", "off"):
        values = [
            r["value"]
            for r in _records(results, "metrics-drain")
            if r["variant"].endswith(f"metrics {metrics}")
        ]
        summary = Summary.of(values)
        lines.append(
            f"| 2 processes, metrics {metrics} | {_num(summary and summary.median)} "
            f"({_num(summary and summary.low)}..{_num(summary and summary.high)}) | "
            f"{len(values)} |"
        )
    for record in _records(results, "metrics-scrape"):
        lines += [
            "",
            f"Rendering /metrics with {record['variant']} (every outcome of every handler, "
            f"plus the cluster gauges): median {record['value']:.1f} ms over "
            f"{record['scrapes']} scrapes, {record['bytes']:,} bytes.",
        ]
    return lines


def _metrics_overhead(results: Results) -> float | None:
    """1 - on/off of the drain medians, or None if either is missing."""
    medians = {}
    for metrics in ("on", "off"):
        summary = Summary.of(
            [
                r["value"]
                for r in _records(results, "metrics-drain")
                if r["variant"].endswith(f"metrics {metrics}")
            ]
        )
        if summary is None:
            return None
        medians[metrics] = summary.median
    return 1 - medians["on"] / medians["off"]


def target_rows(results: Results, row: Row) -> None:
    """Append the targets of issues 3-5, 11 and 24 through ``row(target, measured, ok)``."""
    cost = _metrics_overhead(results)
    row(
        "metrics overhead on the 2-process drain < 3%",
        "—" if cost is None else f"{cost * 100:.1f}% (1 - on/off of the medians)",
        None if cost is None else cost < 0.03,
    )
    free, keyed, keyed_records = _limited(results)
    ratio = keyed.median / free.median if free and keyed and free.median else None
    row(
        "limited drain (100 keys x limit 5) within 30% of unconstrained",
        f"{_num(keyed and keyed.median)} vs {_num(free and free.median)} jobs/s "
        f"(ratio {_num(ratio, 2)})",
        None if ratio is None else ratio >= KEY_LIMIT_TARGET,
    )
    if keyed_records:
        worst = max(r["max_per_key"] for r in keyed_records)
        limit = keyed_records[0]["key_limit"]
        samples = sum(r["busy_samples"] for r in keyed_records)
        row(
            f"per-key limit held (≤ {limit} claimed+running per key)",
            f"max {worst} per key over {samples:,} samples with runs in flight",
            worst <= limit,
        )
    cron = _cron(results)
    if cron is None:
        row("cron: every run created before its slot; start p99 within the drain bound", "—", None)
    else:
        measured = [s for s in cron["slots"] if s["measured"]]
        before = bool(measured) and all(_before(s) for s in measured)
        exact = bool(measured) and all(
            s["runs"] == cron["schedules"] == s["jobs"] for s in measured
        )
        latest = max((s.get("all_s", float("inf")) for s in measured), default=None)
        planning = max((_planning_s(s) or float("inf") for s in measured), default=None)
        row(
            f"cron ({cron['variant']}): every run created before its slot",
            f"all of a slot's runs committed by {_num(latest, 2)} s relative to the slot "
            f"(worst slot); planning one slot took ≤ {_num(planning, 2)} s"
            if measured
            else "no measured slot made runs",
            before,
        )
        row(
            f"cron: exactly {cron['schedules']:,} runs per slot",
            ", ".join(f"{s['runs']:,} runs / {s['jobs']:,} jobs" for s in measured) or "—",
            exact,
        )
        p99 = cron["overall"]["p99_s"]
        bound = _drain_bound_s(results, cron["schedules"])
        row(
            "cron: start p99 within the drain bound (a slot's runs / the 2-process drain "
            f"rate of (b) + {CRON_DRAIN_SLACK_S:g} s)",
            f"p99 {_num(p99, 3)} s, p50 {_num(cron['overall']['p50_s'], 3)} s, "
            f"max {_num(cron['overall']['max_s'], 3)} s over {cron['overall']['runs']:,} runs; "
            f"bound {_num(bound, 2)} s ({cron['schedules']:,} runs at "
            f"{_num(_drain_rate(results))} jobs/s)",
            None if p99 is None or bound is None else p99 <= bound,
        )
    for r in _records(results, "api"):
        worst_label, worst = max(r["lists"].items(), key=lambda kv: kv[1]["p99_ms"])
        row(
            f"API list p99 < 50 ms ({r['system']}, {r['rows']:,} runs)",
            f"worst p99 {worst['p99_ms']:.1f} ms ({worst_label})",
            worst["p99_ms"] < API_P99_TARGET_MS,
        )
    for r in _records(results, "dashboard"):
        overview = r["pages"].get("/")
        if overview is not None:
            row(
                f"dashboard overview p99 < 50 ms ({r['system']}, {r['rows']:,} runs)",
                f"p99 {overview['p99_ms']:.1f} ms (p50 {overview['p50_ms']:.1f} ms)",
                overview["p99_ms"] < API_P99_TARGET_MS,
            )
    row(*claimsize_target(results))
    row(*retire_target(results))


def limited_lines(results: Results) -> list[str]:
    free, keyed, keyed_records = _limited(results)
    if keyed is None and free is None:
        return ["(not measured in this run)"]
    lines = [
        "| variant | jobs/s (median, min..max) | max claimed+running per key | "
        "max in flight (all keys) | samples (with runs in flight) |",
        "|---|---:|---:|---:|---:|",
    ]
    if free:
        lines.append(
            f"| unconstrained, 2 processes | **{_num(free.median)}** "
            f"({_num(free.low)}..{_num(free.high)}) | — | — | — |"
        )
    if keyed:
        lines.append(
            f"| {keyed_records[0]['variant']} | **{_num(keyed.median)}** "
            f"({_num(keyed.low)}..{_num(keyed.high)}) | "
            f"{max(r['max_per_key'] for r in keyed_records)} | "
            f"{max(r['max_in_flight'] for r in keyed_records)} | "
            f"{sum(r['samples'] for r in keyed_records):,} "
            f"({sum(r['busy_samples'] for r in keyed_records):,}) |"
        )
    lines += [
        "",
        "Each repeat measures the unconstrained 2-process drain and then the keyed one, "
        "each in a fresh database, with the same worker setting as (b). The keyed runs are "
        "enqueued with `enqueue_many` (`concurrency_key=f'k{i % 100}'`, `key_limit=5`), so "
        "consecutive runs belong to different keys. A sampler thread on its own connection "
        "runs `SELECT concurrency_key, count(*) FROM rota_runs WHERE state IN ('claimed', "
        "'running') GROUP BY 1` every ~10 ms during the keyed drain.",
    ]
    return lines


def cron_lines(results: Results) -> list[str]:
    cron = _cron(results)
    if cron is None:
        return ["(not measured in this run)"]
    lines = [
        f"{cron['variant']}: {cron['schedules']:,} jobs with cron `* * * * *`, saved through "
        f"`rota.services.schedules.save_job` in {cron['create_s']:g} s (setup, not measured); "
        "2 worker "
        "processes with the no-op handler, planner at Settings defaults (tick 1 s, horizon "
        f"{cron.get('horizon_s', 5):g} s). Times are relative to the slot (negative: before "
        "it), from the database clock "
        "(`created_at`, `started_at` = claim time, `slot_at`). Every run of a tick "
        "gets the tick's `now` as `created_at`, so when runs became visible (committed) is "
        "watched from outside: `count(*)` of the slot's runs every 0.1 s from "
        f"{2 * cron.get('horizon_s', 5) + 5:g} s before "
        "the slot (first visible / all visible); planning = all visible - planner tick. "
        "First start = the earliest `started_at`, i.e. the first claim after the slot.",
        "",
        "| slot (UTC) | measured | runs | distinct jobs | planner tick (created_at) | "
        "first visible | all visible | planning s | all before slot | first start | "
        "start p50 | start p99 | start max |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|",
    ]
    for s in cron["slots"]:
        before = _before(s) if s["measured"] else s["created_last_s"] < 0
        lines.append(
            f"| {s['slot_at']} | {'yes' if s['measured'] else 'warm-up'} | {s['runs']:,} | "
            f"{s['jobs']:,} | {_num(s['created_first_s'], 2)} | {_num(s.get('first_s'), 2)} | "
            f"{_num(s.get('all_s'), 2)} | {_num(_planning_s(s), 2)} | "
            f"{'yes' if before else '**no**'} | {_num(s.get('min_s'), 3)} | "
            f"{_num(s['p50_s'], 3)} | {_num(s['p99_s'], 3)} | {_num(s['max_s'], 3)} |"
        )
    o = cron["overall"]
    lines += [
        f"| all measured | | {o['runs']:,} | | | | | | | | {_num(o['p50_s'], 3)} | "
        f"{_num(o['p99_s'], 3)} | {_num(o['max_s'], 3)} |",
        "",
        "Warm-up slots are not judged: the jobs' first slot, which may pass before the "
        "workers started (planned late by design: catch-up), and the slot from which the "
        "planner learns how long planning a slot takes (its lead, ADR 0029). "
        "Every slot's runs become due at the same instant, so the start delay includes "
        f"draining them: at the {_num(_drain_rate(results))} runs/s of the 2-process drain "
        f"above, {cron['schedules']:,} runs take "
        f"~{_num(_drain_bound_s(results, cron['schedules']), 1)} s by themselves (issue "
        "25's bound). The planner writes a "
        "batch of 500 jobs' runs per transaction. A worker that found nothing due waits "
        "for a NOTIFY or its "
        "`poll_seconds` (1 s) timeout; the runs were inserted (and notified) ~5 s before "
        "they are due, so nothing wakes the workers at the slot itself (see the analysis).",
    ]
    if "unfinished_in_last_slot" in cron:
        lines.append(
            f"\n**{cron['unfinished_in_last_slot']:,} runs of the last slot were not finished "
            "45 s after it.**"
        )
    return lines


def api_lines(results: Results) -> list[str]:
    records = _records(results, "api")
    if not records:
        return ["(not measured in this run)"]
    lines = [
        "| store | runs in table | request | requests | p50 ms | p99 ms | max ms |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    for r in records:
        for label, m in r["lists"].items():
            lines.append(
                f"| {r['system']} | {r['rows']:,} | `GET /api/v1/runs?{label}` "
                f"| {m['requests']:,} | {m['p50_ms']:.2f} | {m['p99_ms']:.2f} | {m['max_ms']:.2f} |"
            )
    lines += [
        "",
        "Trigger: `POST /api/v1/jobs/{name}/trigger` on one manual job, "
        f"{records[0]['trigger']['clients']} concurrent async httpx clients (keep-alive) "
        "in the bench's process:",
        "",
        "| store | requests/s | seconds | accepted (202) | errors | p50 ms | p99 ms | max ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in records:
        t = r["trigger"]
        lines.append(
            f"| {r['system']} | **{t['requests_per_s']:,.0f}** | {t['seconds']:g} | "
            f"{t['requests']:,} | {t['errors']} | {t['p50_ms']:.2f} | {t['p99_ms']:.2f} | "
            f"{t['max_ms']:.2f} |"
        )
    load_times = ", ".join(f"{r['load_s']:g} s" for r in records)
    lines += [
        "",
        "Setup: the runs are loaded by direct SQL (1% dead-lettered, 2% pending, the rest "
        "succeeded; 4 handlers, 4 queues; every NOT NULL column filled), then `ANALYZE` "
        f"(load took {load_times}). `rota server "
        "--no-worker --no-leader --app rota.examples:app` runs as its own process with "
        "`ROTA_ENV=development` (token from `POST /dev/token`, role admin) and "
        "**`ROTA_API_RATE_PER_SECOND=1000000 ROTA_API_RATE_BURST=1000000`**: the default "
        "per-subject limit (20/s, burst 60) would otherwise answer 429. Each filter gets 20 "
        "uncounted warm-up requests, then sequential requests on one keep-alive client; "
        "the cursor walk follows `next_cursor` of `state=dead_lettered` for up to 20 pages. "
        "Client, server and database share the 2 CPUs.",
    ]
    return lines
