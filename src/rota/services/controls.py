"""The cluster-wide controls on starting runs: concurrency limits, rate limits and
circuit breakers (listed, set, cleared, reset)."""

from __future__ import annotations

from rota.clock import Clock
from rota.domain.breakers import Breaker, BreakerRow, Transition, as_of
from rota.domain.limits import Limit
from rota.domain.rates import RateLimit, micros
from rota.errors import InvalidArgument
from rota.services.runs import Namespaces
from rota.store.port import Store


async def list_limits(store: Store) -> list[Limit]:
    """Every cluster-wide cap on running runs."""
    return await store.list_limits()


async def set_limit(store: Store, scope: str, name: str, max_running: int) -> Limit:
    limit = Limit.parse(scope, name, max_running)
    await store.set_limit(limit)
    return limit


async def clear_limit(store: Store, scope: str, name: str) -> None:
    if not await store.clear_limit(scope, name):
        raise InvalidArgument("limit", f"{scope}:{name}", "an existing limit (see list_limits)")


async def list_breakers(
    store: Store, clock: Clock, namespaces: Namespaces = None
) -> list[BreakerRow]:
    """Every circuit breaker that has seen an outcome, with its state and why, and the
    outcomes of its current failure-rate window (none once the window has passed).
    Within ``namespaces`` (None: all): the breakers runs of those namespaces moved."""
    rows = await store.list_breakers(_sorted(namespaces))
    rules = await store.breaker_rules()
    now = micros(clock.now())
    return [as_of(row, rules.get(row.handler), now) for row in rows]


async def breaker_transitions(
    store: Store, limit: int = 50, namespaces: Namespaces = None
) -> list[Transition]:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
        raise InvalidArgument("limit", limit, "an integer 1-1000")
    return await store.breaker_transitions(limit, _sorted(namespaces))


def _sorted(namespaces: Namespaces) -> list[str] | None:
    return None if namespaces is None else sorted(namespaces)


async def reset_breaker(store: Store, clock: Clock, handler: str, key: str = "") -> BreakerRow:
    """Close a breaker by hand (the transition is recorded with that cause)."""
    return await store.reset_breaker(handler, key, clock.db_now())


async def breaker_rules(store: Store) -> dict[str, Breaker]:
    """Every handler's breaker rule, as its workers wrote it."""
    return await store.breaker_rules()


async def list_rates(store: Store) -> list[RateLimit]:
    """Every cluster-wide rate limit on run starts."""
    return await store.list_rates()


async def set_rate(store: Store, scope: str, name: str, rate: str) -> RateLimit:
    limit = RateLimit.parse(scope, name, rate)
    await store.set_rate(limit)
    return limit


async def clear_rate(store: Store, scope: str, name: str) -> None:
    if not await store.clear_rate(scope, name):
        raise InvalidArgument("rate", f"{scope}:{name}", "an existing rate (see list_rates)")
