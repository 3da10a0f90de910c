"""docs/benchmarks.png: four panels, medians as bars with min..max whiskers."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display on a CI box
import matplotlib.pyplot as plt

from bench.results import Results, Summary

COLORS = {
    "rota": "#1f6feb",
    "rota (SQLite)": "#7aa7f5",
    "PgQueuer": "#d97706",
    "Procrastinate": "#6b7280",
}


Bar = tuple[str, str, str]  # (scenario, system, variant)


def _short(variant: str) -> str:
    """Tick labels must fit under narrow bars: "2 processes, after ANALYZE" -> "2p, ANALYZE"."""
    for long, short in (
        (" processes", "p"),
        (" process", "p"),
        ("after ANALYZE", "ANALYZE"),
        (" keys x limit ", " keys, lim "),
    ):
        variant = variant.replace(long, short)
    return variant


def _bars(ax, results: Results, bars: list[Bar], title: str) -> None:  # type: ignore[no-untyped-def]
    """One bar per measurement with its spread; label under each bar."""
    labels, medians, lows, highs, colors = [], [], [], [], []
    for scenario, system, variant in bars:
        summary = Summary.of(results.values(scenario, system, variant))
        if summary is None:
            continue
        labels.append(f"{system}\n{_short(variant)}")
        medians.append(summary.median)
        lows.append(summary.median - summary.low)
        highs.append(summary.high - summary.median)
        colors.append(COLORS.get(system, "#999999"))
    positions = range(len(labels))
    ax.bar(positions, medians, color=colors, yerr=[lows, highs], capsize=3)
    ax.set_xticks(list(positions), labels, fontsize=6.5, rotation=35, ha="right")
    ax.set_title(title, fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    for x, value in zip(positions, medians, strict=True):
        ax.annotate(f"{value:,.0f}", (x, value), ha="center", va="bottom", fontsize=6.5)


def _latency(ax, results: Results) -> None:  # type: ignore[no-untyped-def]
    records = [r for r in results.records if r["scenario"] == "latency"]
    names = list(dict.fromkeys(r["system"] for r in records))

    def median_of(system: str, key: str) -> float:
        summary = Summary.of([r[key] for r in records if r["system"] == system])
        return summary.median if summary else 0.0

    width = 0.38
    p50 = [median_of(name, "p50_ms") for name in names]
    p99 = [median_of(name, "p99_ms") for name in names]
    xs = list(range(len(names)))
    ax.bar([x - width / 2 for x in xs], p50, width, label="p50", color="#93c5fd")
    ax.bar([x + width / 2 for x in xs], p99, width, label="p99", color="#1e3a8a")
    ax.axhline(10, color="#b91c1c", linestyle="--", linewidth=0.8, label="target p99 10 ms")
    ax.set_xticks(xs, names, fontsize=7)
    ax.set_ylabel("ms", fontsize=7)
    ax.set_title("(c) enqueue-to-start latency at ~50 jobs/s (median of runs)", fontsize=9)
    ax.legend(fontsize=6.5, loc="upper left")
    ax.grid(axis="y", alpha=0.3)


def _sustain(ax, results: Results) -> None:  # type: ignore[no-untyped-def]
    records = [r for r in results.records if r["scenario"] == "sustain"]
    if not records:
        ax.set_title("(e) rota sustained", fontsize=9)
        ax.text(0.5, 0.5, "not measured", ha="center", transform=ax.transAxes)
        return
    record = records[0]
    ax.set_title(
        f"(e) rota sustained, {record['variant']} (jobs/s per {record['series_step_s']} s)",
        fontsize=9,
    )
    series = record["series"]
    ax.plot([t / 60 for t, _ in series], [v for _, v in series], color=COLORS["rota"])
    ax.set_xlabel("minutes", fontsize=7)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)


def _cron(ax, results: Results) -> None:  # type: ignore[no-untyped-def]
    records = [r for r in results.records if r["scenario"] == "cron"]
    if not records:
        ax.set_title("(g) cron: start delay after the slot", fontsize=9)
        ax.text(0.5, 0.5, "not measured", ha="center", transform=ax.transAxes)
        return
    ax.set_title(
        f"(g) cron: start delay after the slot, s ({records[0]['schedules']:,} runs per slot)",
        fontsize=9,
    )
    slots = [s for s in records[0]["slots"] if s["measured"]]
    xs = list(range(len(slots)))
    width = 0.27
    bars = ((-1, "p50_s", "#93c5fd"), (0, "p99_s", "#1e3a8a"), (1, "max_s", "#6b7280"))
    for offset, key, color in bars:
        values = [s[key] or 0.0 for s in slots]
        ax.bar([x + offset * width for x in xs], values, width, label=key[:-2], color=color)
    ax.axhline(1.0, color="#b91c1c", linestyle="--", linewidth=0.8, label="target p99 1 s")
    ax.set_xticks(xs, [f"slot {s['slot_at']}" for s in slots], fontsize=7)
    ax.set_ylabel("s", fontsize=7)
    ax.legend(fontsize=6.5, loc="upper left")
    ax.grid(axis="y", alpha=0.3)


def _api(ax, results: Results) -> None:  # type: ignore[no-untyped-def]
    records = [r for r in results.records if r["scenario"] == "api"]
    ax.set_title("(h) HTTP API: GET /api/v1/runs latency, ms (p50 / p99)", fontsize=9)
    if not records:
        ax.text(0.5, 0.5, "not measured", ha="center", transform=ax.transAxes)
        return
    labels, p50, p99 = [], [], []
    for r in records:
        store = r["system"].removeprefix("rota server (").removesuffix(")")
        for label, m in r["lists"].items():
            short = "cursor walk" if "cursor" in label else label.split("&limit")[0]
            labels.append(f"{store}\n{short}")
            p50.append(m["p50_ms"])
            p99.append(m["p99_ms"])
    xs = list(range(len(labels)))
    width = 0.38
    ax.bar([x - width / 2 for x in xs], p50, width, label="p50", color="#93c5fd")
    ax.bar([x + width / 2 for x in xs], p99, width, label="p99", color="#1e3a8a")
    ax.axhline(50, color="#b91c1c", linestyle="--", linewidth=0.8, label="target p99 50 ms")
    ax.set_xticks(xs, labels, fontsize=6, rotation=35, ha="right")
    trigger = "; ".join(
        f"{r['system'].removeprefix('rota server ')}: {r['trigger']['requests_per_s']:,.0f}/s"
        for r in records
    )
    ax.text(
        0.99, 0.97, f"trigger {trigger}", ha="right", va="top", fontsize=6.5, transform=ax.transAxes
    )
    ax.legend(fontsize=6.5, loc="upper left")
    ax.grid(axis="y", alpha=0.3)


def write_chart(
    results: Results, path: Path, enqueue_bars: list[Bar], drain_bars: list[Bar]
) -> None:
    jobs = results.meta.get("config", {}).get("jobs", "?")
    fig, axes = plt.subplots(3, 2, figsize=(13, 14))
    _bars(axes[0][0], results, enqueue_bars, "(a) bulk enqueue, jobs/s (median, min..max)")
    _bars(axes[0][1], results, drain_bars, f"(b, d, f) drain {jobs:,} no-op jobs, jobs/s")
    _latency(axes[1][0], results)
    _sustain(axes[1][1], results)
    _cron(axes[2][0], results)
    _api(axes[2][1], results)
    for ax in axes.flat:
        ax.tick_params(axis="y", labelsize=7)
    fig.suptitle(
        f"rota vs PgQueuer vs Procrastinate — {results.meta.get('date', '')}, "
        f"{results.meta.get('nproc', '?')} CPUs, PostgreSQL "
        f"{results.meta.get('postgresql', '?')}",
        fontsize=10,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
