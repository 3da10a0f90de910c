"""(k) Issue 14: a drain under a rate limit, and the cost of a closed circuit breaker.

Three drains of the same ``cfg.jobs`` no-op runs by the 2 worker processes, each in a
fresh database, in one repeat so machine drift hits all alike:

- unconstrained (the reference);
- the handler rate-limited to RATE/second: the drain should run at the rate, not
  above it (it is enforced) and not far below it (the limit is reached). Both are read
  from the recorded start instants (rota_run_attempts.started_at, the claim's instant that
  the rate log counts): the most starts any window of one period saw, and the pace
  after the first window (which may start RATE runs at once: the burst a sliding
  window allows) to the last full second;
- the handler under an enabled breaker that stays closed (no run fails): its runs
  take the plain claim, and their successes, which move nothing, are written by the
  one completion statement (ADR 0016); the gap to the reference is the breaker's
  overhead.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from bench import pg, rota_runner, scenarios
from bench.config import BenchConfig
from bench.results import Results, Summary
from bench.starts import Starts
from bench.systems import RotaWorkerSettings, rota_system

RATE = 5000
STARTS_SQL = (
    "SELECT (EXTRACT(EPOCH FROM started_at) * 1000000)::bigint FROM rota_run_attempts"
    " ORDER BY started_at"
)
UNCONSTRAINED = "2 processes, no rate, no breaker"
RATED = f"2 processes, rate {RATE}/second"
BREAKER = "2 processes, breaker enabled (closed)"


async def _prefill_rated(url: str, total: int) -> None:
    from rota.domain.rates import Rate, RateLimit, RateScope

    await rota_runner.prefill(url, total)
    app = rota_runner.make_app(url)
    try:
        store = await app.store()
        await store.set_rate(RateLimit(RateScope.HANDLER, "noop", Rate(RATE, 1)))
    finally:
        await app.aclose()


async def prefill_closed_breaker(url: str, total: int) -> None:
    from rota.domain.breakers import Breaker

    await rota_runner.prefill(url, total)
    app = rota_runner.make_app(url)
    try:
        store = await app.store()
        await store.set_breaker_rule("noop", Breaker(failures=5, window=60, cool_down=30))
    finally:
        await app.aclose()


class StartRecorder:
    """Held around a drain (scenarios.pg_drain_once's ``watch``): on leaving, reads every
    attempt's start instant before the database is dropped."""

    def __init__(self) -> None:
        self.starts: Starts | None = None

    @contextlib.contextmanager
    def watch(self, url: str) -> Iterator[None]:
        yield
        with pg.Probe(url) as probe:
            instants = [int(str(row[0])) for row in probe.rows(STARTS_SQL)]
        self.starts = Starts.of(instants)


def rates_and_breakers(cfg: BenchConfig, results: Results, worker: RotaWorkerSettings) -> None:
    system = rota_system(worker)
    processes = max(cfg.worker_counts)
    for variant, prefill in (
        (UNCONSTRAINED, None),
        (RATED, _prefill_rated),
        (BREAKER, prefill_closed_breaker),
    ):
        recorder = StartRecorder()

        def drain(
            prefill: scenarios.Prefill | None = prefill, recorder: StartRecorder = recorder
        ) -> scenarios.DrainResult:
            watch = recorder.watch if prefill is _prefill_rated else None
            return scenarios.pg_drain_once(cfg, system, processes, prefill=prefill, watch=watch)

        result = results.attempt("rates", "rota", variant, drain)
        if result is not None:
            starts = recorder.starts.as_dict() if recorder.starts else {}
            results.add("rates", "rota", variant, result.jobs_per_s, **result.as_dict(), **starts)


def _paired(results: Results, variant: str) -> list[tuple[float, float]]:
    """(variant, unconstrained) jobs/s of each repeat that measured both."""
    return list(
        zip(
            results.values("rates", "rota", variant),
            results.values("rates", "rota", UNCONSTRAINED),
            strict=False,
        )
    )


def _rated_records(results: Results) -> list[dict[str, Any]]:
    return [r for r in results.records if r["scenario"] == "rates" and r["variant"] == RATED]


def rates_lines(results: Results) -> list[str]:
    """Section (l): the three drains of each repeat, and each against the reference."""
    variants = (UNCONSTRAINED, RATED, BREAKER)
    if not any(results.values("rates", "rota", v) for v in variants):
        return ["(not measured in this run)"]
    lines = [
        "| variant | jobs/s per repeat | median | / unconstrained, per repeat |",
        "|---|---|---:|---|",
    ]
    for variant in variants:
        values = results.values("rates", "rota", variant)
        summary = Summary.of(values)
        ratios = ", ".join(f"{ours / ref:.2f}" for ours, ref in _paired(results, variant))
        lines.append(
            f"| {variant} | {', '.join(f'{v:,.0f}' for v in values)} | "
            f"{summary.median:,.0f} | {ratios if variant != UNCONSTRAINED else '—'} |"
            if summary
            else f"| {variant} | failed | — | — |"
        )
    lines += ["", *_starts_lines(_rated_records(results)), ""]
    lines += [
        f"The same no-op runs drained by {RATED.split(',')[0]} on PostgreSQL in a fresh "
        "database each, the three variants in turn within each repeat: the reference, the "
        f"handler rate-limited to {RATE:,}/second, and the handler under an enabled "
        "breaker that stays closed (its overhead is the gap to the reference). The rated "
        "drain's jobs/s above is over the whole drain, which the first window's burst "
        f"(up to {RATE:,} starts at once) speeds up; the table of starts reads the "
        "recorded start instants (`rota_run_attempts.started_at`, the claim's instant the "
        "rate log counts): the most starts any one-second span saw (the limit forbids "
        f"more than {RATE:,}), and the pace from one second after the first start to "
        "the last whole second after that, which is what the limit lets a drain "
        "sustain.",
    ]
    return lines


def _starts_lines(records: list[dict[str, Any]]) -> list[str]:
    measured = [r for r in records if r.get("steady_per_s") is not None]
    if not measured:
        return ["(the rated drain's start instants were not read in this run)"]
    lines = [
        "| rated drain, repeat | most starts in any 1 s | pace after the first second, "
        "starts/s | over | of the limit |",
        "|---|---:|---:|---:|---:|",
    ]
    for i, r in enumerate(measured, 1):
        lines.append(
            f"| {i} | {r['busiest_window']:,} | {r['steady_per_s']:,.0f} | "
            f"{r['steady_seconds']} s | {r['steady_per_s'] / RATE:.1%} |"
        )
    return lines


def rates_targets(results: Results) -> list[tuple[str, str, bool | None]]:
    """Issue 14's two measured targets: (target, measured, reached)."""
    records = [r for r in _rated_records(results) if r.get("steady_per_s") is not None]
    paces = [r["steady_per_s"] / RATE for r in records]
    pace = Summary.of(paces)
    busiest = max((r["busiest_window"] for r in records), default=None)
    breaker = [ours / ref for ours, ref in _paired(results, BREAKER)]
    middle = Summary.of(breaker)
    return [
        (
            f"rate limit {RATE:,}/s: the rated drain's pace within 5% of the limit, never over it",
            f"pace after the first second {', '.join(f'{r:.1%}' for r in paces)} of the "
            f"limit per repeat (median {pace.median:.1%}); most starts in any 1 s: "
            f"{busiest:,}"
            if pace and busiest is not None
            else "—",
            None if pace is None or busiest is None else pace.median >= 0.95 and busiest <= RATE,
        ),
        (
            "an enabled, closed breaker costs under 5% of the drain",
            f"breaker / unconstrained per repeat {', '.join(f'{r:.2f}' for r in breaker)} "
            f"(median {middle.median:.2f})"
            if middle
            else "—",
            None if middle is None else middle.median >= 0.95,
        ),
    ]
