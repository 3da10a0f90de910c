"""Circuit breakers on both stores, with the store's clock injected."""

from __future__ import annotations

from rota.domain.breakers import Breaker, BreakerState
from rota.domain.states import AttemptOutcome, RunState
from rota.store.port import ClaimRequest, Store

from .support import T0, at, enqueue_one, finished, peers, retrying, succeeded

RULE = Breaker(failures=5, window=60, cool_down=30, probes=1)


def _request(limit: int = 1, worker: str = "w") -> ClaimRequest:
    return ClaimRequest(worker, ("default",), limit, 30.0, ())


async def _state(store: Store, key: str = "") -> BreakerState | None:
    rows = {(b.handler, b.key): b for b in await store.list_breakers()}
    row = rows.get(("job", key))
    return None if row is None else row.state


async def _fail_five(store: Store, **fields: str) -> None:
    for i in range(5):
        await enqueue_one(store, T0, **fields)
        [claimed] = await store.claim(_request(), at(i))
        await store.complete([retrying(claimed, delay=0.0)], at(i))


async def test_five_failures_open_it_cluster_wide_and_a_probe_closes_it(store: Store) -> None:
    await store.set_breaker_rule("job", RULE)
    await _fail_five(store)
    assert await _state(store) is BreakerState.OPEN
    waiting = await enqueue_one(store, T0)
    async with peers(store, 2) as others:
        for claimer in (store, *others):
            assert await claimer.claim(_request(10), at(20)) == [], "open: nobody claims"
    probes = await store.claim(_request(10), at(34))
    assert len(probes) == 1, "after the cool-down exactly one probe goes through"
    assert await _state(store) is BreakerState.HALF_OPEN
    assert await store.claim(_request(10), at(35)) == [], "one probe at a time"
    await store.complete([succeeded(probes[0])], at(36))
    assert await _state(store) is BreakerState.CLOSED
    rest = await store.claim(_request(10), at(37))
    assert len(rest) == 5, "closed: the runs that waited are claimed"
    assert waiting in {c.run_id for c in [*probes, *rest]}
    moves = [(t.from_state, t.to_state) for t in reversed(await store.breaker_transitions(10))]
    assert moves == [
        (BreakerState.CLOSED, BreakerState.OPEN),
        (BreakerState.OPEN, BreakerState.HALF_OPEN),
        (BreakerState.HALF_OPEN, BreakerState.CLOSED),
    ]
    first = (await store.breaker_transitions(10))[-1]
    assert first.cause == "5 consecutive failures within 60s"


async def test_runs_wait_without_spending_attempts(store: Store) -> None:
    await store.set_breaker_rule("job", RULE)
    await _fail_five(store)
    run_id = await enqueue_one(store, T0)
    assert await store.claim(_request(10), at(10)) == []
    run = await store.get_run(run_id)
    assert run is not None
    assert (run.state, run.attempt) == (RunState.PENDING, 0)


async def test_a_failed_probe_reopens_it(store: Store) -> None:
    await store.set_breaker_rule("job", RULE)
    await _fail_five(store)
    [probe] = await store.claim(_request(10), at(40))
    await store.complete([finished(probe, RunState.FAILED, AttemptOutcome.FAILED)], at(41))
    assert await _state(store) is BreakerState.OPEN
    assert await store.claim(_request(10), at(60)) == [], "a new cool-down from the reopening"
    assert len(await store.claim(_request(10), at(72))) == 1


async def test_breaker_keys_trip_apart_and_a_success_resets_the_streak(store: Store) -> None:
    await store.set_breaker_rule("job", RULE)
    await _fail_five(store, breaker_key="host-a")
    assert await _state(store, "host-a") is BreakerState.OPEN
    other = await enqueue_one(store, T0, breaker_key="host-b")
    assert [c.run_id for c in await store.claim(_request(10), at(10))] == [other]
    await _fail(store, 4, 11, "host-c")
    await enqueue_one(store, T0, breaker_key="host-c")
    [ok] = await store.claim(_request(10), at(20))
    await store.complete([succeeded(ok)], at(20))
    await _fail(store, 4, 21, "host-c")
    assert await _state(store, "host-c") is BreakerState.CLOSED, "4 in a row since the success"
    await _fail(store, 1, 30, "host-c")
    assert await _state(store, "host-c") is BreakerState.OPEN


async def _fail(store: Store, count: int, start: float, key: str) -> None:
    for i in range(count):
        await enqueue_one(store, T0, breaker_key=key)
        [claimed] = await store.claim(_request(), at(start + i))
        failed = finished(claimed, RunState.FAILED, AttemptOutcome.FAILED)
        await store.complete([failed], at(start + i))


async def test_an_operator_reset_closes_it(store: Store) -> None:
    await store.set_breaker_rule("job", RULE)
    await _fail_five(store)
    row = await store.reset_breaker("job", "", at(6))
    assert row.state is BreakerState.CLOSED
    assert len(await store.claim(_request(10), at(7))) == 5
    assert (await store.breaker_transitions(1))[0].cause == "reset by an operator"


RATE_RULE = Breaker(failure_rate=0.5, window=60, min_calls=10, cool_down=30, probes=1)


async def _outcomes(store: Store, pattern: str, start: float, **fields: str) -> None:
    """One run per letter: F fails, S succeeds, each one second after the last."""
    for i, letter in enumerate(pattern):
        await enqueue_one(store, T0, **fields)
        [claimed] = await store.claim(_request(), at(start + i))
        outcome = retrying(claimed, delay=0.0) if letter == "F" else succeeded(claimed)
        await store.complete([outcome], at(start + i))


async def test_a_failure_rate_over_the_window_opens_it(store: Store) -> None:
    await store.set_breaker_rule("job", RATE_RULE)
    # Never two failures in a row; 5 of 10 failed by the tenth outcome.
    await _outcomes(store, "SFSFSFSFS", 0)
    assert await _state(store) is BreakerState.CLOSED, "4 of 9: under min_calls"
    row = {(b.handler, b.key): b for b in await store.list_breakers()}[("job", "")]
    assert (row.window_calls, row.window_failures) == (9, 4), "successes are counted too"
    await _outcomes(store, "F", 9)
    assert await _state(store) is BreakerState.OPEN
    [opened] = await store.breaker_transitions(1)
    assert opened.cause == "5 of 10 outcomes failed within 60s (rate 0.5)"
    await enqueue_one(store, T0)
    async with peers(store, 1) as [other]:
        assert await other.claim(_request(10), at(20)) == [], "open for every node"


async def test_a_window_that_passed_forgets_its_outcomes(store: Store) -> None:
    await store.set_breaker_rule("job", RATE_RULE)
    await _outcomes(store, "FSFSFSFSS", 0)  # 4 of 9
    await _outcomes(store, "F", 61)  # a new window: 1 of 1, under min_calls
    assert await _state(store) is BreakerState.CLOSED
    assert (await store.breaker_rules())["job"] == RATE_RULE


async def test_a_fail_fast_handler_fails_its_runs_at_once_without_an_attempt(
    store: Store,
) -> None:
    await store.set_breaker_rule("job", Breaker(failures=2, cool_down=30, when_open="fail"))
    await _fail(store, 2, 0, "host-a")
    doomed = await enqueue_one(store, T0, breaker_key="host-a")
    other = await enqueue_one(store, T0, breaker_key="host-b")
    claimed = await store.claim(_request(10), at(5))
    assert [c.run_id for c in claimed] == [other], "another key's breaker is closed"
    run = await store.get_run(doomed)
    assert run is not None
    assert (run.state, run.attempt) == (RunState.FAILED, 0)
    assert run.error == (
        "circuit breaker of job (breaker_key 'host-a') is open "
        "(2 consecutive failures within 60s): failed fast, no attempt made"
    )
    assert await store.attempts(doomed) == [], "no attempt was made or recorded"
    later = await enqueue_one(store, T0, breaker_key="host-a")
    [probe] = await store.claim(_request(10), at(40))
    assert probe.run_id == later, "after the cool-down a probe goes through as usual"
