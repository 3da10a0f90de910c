"""Section (r) of the report, and its target row: the drop of a day of history, and the
drain beside it against the same drain without the drop, repeat by repeat."""

from __future__ import annotations

from typing import Any

from bench.progress import Progress
from bench.results import Results, Summary
from bench.retire import DROPPED, PLAIN, SCENARIO

DROP_TARGET_S = 1.0
DRAIN_TARGET = 0.95  # the drain with the drop over the drain without it


def _num(value: float | None, digits: int = 0) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def _middle(summary: Summary | None) -> float | None:
    return None if summary is None else summary.median


def _pairs(results: Results) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(with the drop, without it) of each repeat that measured both."""
    by_repeat: dict[int, dict[str, dict[str, Any]]] = {}
    for r in results.records:
        if r["scenario"] == SCENARIO:
            by_repeat.setdefault(r["repeat"], {})[r["variant"]] = r
    return [(pair[DROPPED], pair[PLAIN]) for _, pair in sorted(by_repeat.items()) if len(pair) == 2]


def _progress(record: dict[str, Any]) -> Progress:
    samples = [(float(t), int(done)) for t, done in record["series"]]
    return Progress.of(samples, record["jobs"], record["seconds"])


def _window_cell(dropped: dict[str, Any], plain: dict[str, Any], name: str) -> str:
    """The drain's pace in one of the drop's windows, with it and without it (the plain
    drain read over the same span of its own run)."""
    start, end = dropped["windows"][name]
    ours, theirs = _progress(dropped).rate(start, end), _progress(plain).rate(start, end)
    span = f"({start:.1f}..{end:.1f} s)"
    if ours is None:
        return f"— {span}: the drain was over"
    if theirs is None:
        return f"{ours:,.0f} / — {span}: the drain without the drop was over"
    return f"{ours:,.0f} / {theirs:,.0f} = {ours / theirs:.2f} {span}"


def _medians(results: Results) -> tuple[Summary | None, Summary | None, Summary | None]:
    """The drop's seconds, and the drain's jobs/s with and without it."""
    dropped = [r for r in results.records if r["scenario"] == SCENARIO and r["variant"] == DROPPED]
    return (
        Summary.of([r["drop_s"] for r in dropped]),
        Summary.of(results.values(SCENARIO, "rota", DROPPED)),
        Summary.of(results.values(SCENARIO, "rota", PLAIN)),
    )


def _day_runs(results: Results) -> int:
    return int(results.meta.get("config", {}).get("retire_runs", 1_000_000))


def retire_target(results: Results) -> tuple[str, str, bool | None]:
    drop, ours, theirs = _medians(results)
    pairs = _pairs(results)
    target = (
        f"dropping a day of history ({_day_runs(results):,} runs) under {DROP_TARGET_S:g} s, "
        f"the drain beside it not slower (drain with drop / drain without ≥ {DRAIN_TARGET:g})"
    )
    if drop is None or ours is None or theirs is None or not pairs:
        return target, "—", None
    ratio = ours.median / theirs.median
    left = sum(d[k] for d, _ in pairs for k in ("runs_left", "attempts_left", "logs_left"))
    outlasted = sum(1 for d, _ in pairs if d["drain_outlasted_drop"])
    measured = (
        f"drop {drop.median:.2f} s (median; {drop.low:.2f}..{drop.high:.2f}); drain "
        f"{ours.median:,.0f} vs {theirs.median:,.0f} jobs/s = {ratio:.2f}; rows of the day "
        f"left: {left}; the drain outlasted the drop in {outlasted} of {len(pairs)}"
    )
    ok = drop.median < DROP_TARGET_S and ratio >= DRAIN_TARGET and left == 0
    return target, measured, ok


def retire_lines(results: Results) -> list[str]:
    pairs = _pairs(results)
    if not pairs:
        return ["(not measured in this run)"]
    drop, ours, theirs = _medians(results)
    lines = [
        "| repeat | drop s | drop's server CPU s | runs retired | drain jobs/s with drop / "
        "without | before the drop | during it | after it |",
        "|---|---:|---:|---:|---|---|---|---|",
    ]
    for repeat, (d, p) in enumerate(pairs, 1):
        lines.append(
            f"| {repeat} | {d['drop_s']:.3f} | {d['drop_server_cpu_s']:.2f} | "
            f"{d['drop_rows']:,} | {d['jobs_per_s']:,.0f} / {p['jobs_per_s']:,.0f} = "
            f"{d['jobs_per_s'] / p['jobs_per_s']:.2f} | {_window_cell(d, p, 'before')} | "
            f"{_window_cell(d, p, 'during')} | {_window_cell(d, p, 'after')} |"
        )
    lines += [
        "",
        "| repeat | runs of the day left | attempts left | log lines left | dead rows in "
        "rota_attempts | dead rows in rota_run_logs | load of the day s |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for repeat, (d, _) in enumerate(pairs, 1):
        lines.append(
            f"| {repeat} | {d['runs_left']:,} | {d['attempts_left']:,} | {d['logs_left']:,} | "
            f"{d['rota_attempts_dead_rows']:,} | {d['rota_run_logs_dead_rows']:,} | "
            f"{d['load_s']:g} |"
        )
    first = pairs[0][0]
    after_s = float(results.meta.get("config", {}).get("retire_after_s", 1.0))
    ratio = ours.median / theirs.median if ours and theirs else None
    lines += [
        "",
        f"Medians: the drop {_num(_middle(drop), 3)} s; the drain "
        f"{_num(_middle(ours))} jobs/s with it, {_num(_middle(theirs))} "
        f"without, ratio **{_num(ratio, 2)}**.",
        "",
        f"Each measurement gets a fresh database holding one day of history "
        f"({first['day_runs']:,} succeeded runs of yesterday, UTC, each with its attempt row "
        "and two log lines, loaded by `INSERT ... SELECT generate_series` through "
        "`rota_runs`, `rota_attempts` and `rota_run_logs`, then `VACUUM (ANALYZE)` and a "
        f"`CHECKPOINT`) and {first['jobs']:,} pending no-op runs, drained by the 2 worker "
        "processes of (b). Yesterday, not a day ahead: retention drops every day partition "
        "that ends before its cut-off, and a fresh install's first partition covers today, "
        "where the drain's finished runs go; so that (empty) partition is retired first and "
        "`rota_make_history_days` makes yesterday and today, as a deployment a few days old "
        f"has them. {after_s:g} s after the start line a connection of its own calls "
        "`rota_retire_history(<end of yesterday>)`; its wall time is the drop's, and its "
        "backend's CPU time (from /proc) the drop's server CPU. Every repeat also drains "
        "the same way over the same history without the drop (which goes first "
        "alternates). The drain's progress is a count of its unfinished runs every 0.1 s; "
        f"the windows are the drop's (before it; from its start for at least {after_s:g} s "
        "or as long as it lasts; after it), and the drain without the drop is read over the "
        "same seconds of its own run (as far as it lasted: it is over sooner when the drop "
        "slowed the other). Rows left are the day's runs, attempts and log lines "
        "still there afterwards (by run id); dead rows are `n_dead_tup` of `rota_attempts` "
        "and `rota_run_logs` (with their partitions, if any) after the drain: what the drop "
        "left to VACUUM.",
    ]
    return lines
