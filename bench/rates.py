"""(k) Issue 14: a drain under a rate limit, and the cost of a closed circuit breaker.

Three drains of the same ``cfg.jobs`` no-op runs by the 2 worker processes, each in a
fresh database, in one repeat so machine drift hits all alike:

- unconstrained (the reference);
- the handler rate-limited to RATE/second: the drain should run at the rate, not
  above it (it is enforced) and not far below it (the limit is reached);
- the handler under an enabled breaker that stays closed (no run fails): its runs
  take the plain claim, and their successes, which move nothing, are written by the
  one completion statement (ADR 0016); the gap to the reference is the breaker's
  overhead.
"""

from __future__ import annotations

from bench import rota_runner, scenarios
from bench.config import BenchConfig
from bench.results import Results, Summary
from bench.systems import RotaWorkerSettings, rota_system

RATE = 5000
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


def rates_and_breakers(cfg: BenchConfig, results: Results, worker: RotaWorkerSettings) -> None:
    system = rota_system(worker)
    processes = max(cfg.worker_counts)
    for variant, prefill in (
        (UNCONSTRAINED, None),
        (RATED, _prefill_rated),
        (BREAKER, prefill_closed_breaker),
    ):

        def drain(prefill: scenarios.Prefill | None = prefill) -> scenarios.DrainResult:
            return scenarios.pg_drain_once(cfg, system, processes, prefill=prefill)

        result = results.attempt("rates", "rota", variant, drain)
        if result is not None:
            results.add("rates", "rota", variant, result.jobs_per_s, **result.as_dict())


def _paired(results: Results, variant: str) -> list[tuple[float, float]]:
    """(variant, unconstrained) jobs/s of each repeat that measured both."""
    return list(
        zip(
            results.values("rates", "rota", variant),
            results.values("rates", "rota", UNCONSTRAINED),
            strict=False,
        )
    )


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
    lines += [
        "",
        f"The same no-op runs drained by {RATED.split(',')[0]} on PostgreSQL in a fresh "
        "database each, the three variants in turn within each repeat: the reference, the "
        f"handler rate-limited to {RATE:,}/second (the drain should run at the rate: not "
        "above it, which the rate forbids, and not far below it), and the handler under "
        "an enabled breaker that stays closed (its overhead is the gap to the reference). "
        "The rate's window lets the first runs start at once, so a drain at the limit "
        "runs faster than the rate itself: the target compares it with the pace the "
        "limit allows (`allowed_pace`).",
    ]
    return lines


def allowed_pace(jobs: int) -> float:
    """The fastest a drain of ``jobs`` may go under RATE per second, in runs/s: the
    window lets the first RATE start at once, then RATE more each second, so the last
    start falls (jobs / RATE - 1) seconds in. A drain "at the limit" matches this, not
    RATE itself (20,000 runs: 3 s, 6,667 runs/s)."""
    return jobs / max(jobs / RATE - 1, 1 / RATE)


def rates_targets(results: Results) -> list[tuple[str, str, bool | None]]:
    """Issue 14's two measured targets: (target, measured, reached)."""
    records = [r for r in results.records if r["scenario"] == "rates" and r["variant"] == RATED]
    paces = [r["jobs_per_s"] / allowed_pace(r["jobs"]) for r in records if "jobs" in r]
    pace = Summary.of(paces)
    breaker = [ours / ref for ours, ref in _paired(results, BREAKER)]
    middle = Summary.of(breaker)
    return [
        (
            f"rate limit {RATE:,}/s: the rated drain within 5% of the pace the limit allows",
            f"{', '.join(f'{r:.0%}' for r in paces)} of the allowed pace per repeat "
            f"(median {pace.median:.0%}; {records[0]['jobs']:,} runs may finish in "
            f"{records[0]['jobs'] / RATE - 1:g} s = {allowed_pace(records[0]['jobs']):,.0f}"
            " runs/s)"
            if pace and records
            else "—",
            None if pace is None else pace.median >= 0.95,
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
