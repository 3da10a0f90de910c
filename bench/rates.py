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
from bench.results import Results
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
