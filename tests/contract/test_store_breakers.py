"""Circuit breakers on both stores, with the store's clock injected."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from rota.domain.breakers import Breaker, BreakerState
from rota.domain.runs import ClaimedRun, Outcome
from rota.domain.states import AttemptOutcome, RunState
from rota.store.port import ClaimRequest, Store
from rota.store.sql_store import SqlStore

from .support import T0, at, claim, enqueue_one, finished, peers, retrying, succeeded

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


def _transactions(store: Store, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the transactions the store opens (each still runs on the real database):
    the cost of a completion, as a count rather than a time."""
    assert isinstance(store, SqlStore)
    opened = [0]
    real = store._d.in_transaction

    async def counted(*args: object, **kwargs: object) -> object:
        opened[0] += 1
        return await real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(store._d, "in_transaction", counted)
    return opened


async def _complete_one(
    store: Store, second: float, outcome: Callable[[ClaimedRun], Outcome], handler: str = "job"
) -> set[int]:
    run_id = await enqueue_one(store, at(second), handler=handler)
    [claimed] = await claim(store, at(second))
    assert claimed.run_id == run_id
    return await store.complete([outcome(claimed)], at(second))


def _failed(claimed: ClaimedRun) -> Outcome:
    return finished(claimed, RunState.FAILED, AttemptOutcome.FAILED)


def _cancelled(claimed: ClaimedRun) -> Outcome:
    return finished(claimed, RunState.CANCELLED, AttemptOutcome.CANCELLED)


async def test_only_what_moves_a_breaker_costs_a_transaction(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A success on a closed breaker with no streak (and no rate to count) moves nothing:
    the one completion statement writes it. A failure, the success that ends a streak
    and a rate rule's success are written with the breaker's move in a transaction."""
    await store.set_breaker_rule("job", Breaker(failures=3))
    await store.set_breaker_rule("rated", Breaker(failure_rate=0.5, min_calls=10))
    opened = _transactions(store, monkeypatch)
    steps: list[tuple[Callable[[ClaimedRun], Outcome], str, int, int]] = [
        # (outcome, handler, transactions it opens, the job breaker's failures after)
        (succeeded, "job", 0, 0),  # no breaker row yet: nothing to move
        (_failed, "job", 1, 1),
        (succeeded, "job", 1, 0),  # ends the streak
        (succeeded, "job", 0, 0),
        (_cancelled, "job", 0, 0),  # says nothing about the dependency
        (succeeded, "plain", 0, 0),  # no rule
        (succeeded, "rated", 1, 0),  # the rate counts every outcome
    ]
    for second, (outcome, handler, transactions, failures) in enumerate(steps):
        before = opened[0]
        assert len(await _complete_one(store, second, outcome, handler)) == 1, "written"
        assert opened[0] - before == transactions, (second, outcome, handler)
        rows = {(b.handler, b.key): b for b in await store.list_breakers()}
        job = rows.get(("job", ""))
        assert (0 if job is None else job.failures) == failures, (second, handler)
    rated = {b.handler: b for b in await store.list_breakers()}["rated"]
    assert (rated.window_calls, rated.window_failures) == (1, 0)


async def test_a_batch_writes_its_quiet_successes_at_once_and_judges_the_rest(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    await store.set_breaker_rule("job", Breaker(failures=2))
    for _ in range(3):
        await enqueue_one(store, T0)
    first, second, third = await claim(store, at(1), limit=3)
    opened = _transactions(store, monkeypatch)
    outcomes = [succeeded(first), _failed(second), succeeded(third)]
    written = await store.complete(outcomes, at(2))
    assert written == {first.run_id, second.run_id, third.run_id}
    assert opened[0] == 1, "one transaction, for the failure only"
    [row] = await store.list_breakers()
    assert (row.state, row.failures) == (BreakerState.CLOSED, 1)


async def test_a_success_on_an_open_breaker_is_judged_and_closes_it(store: Store) -> None:
    """A run claimed before its breaker opened that then succeeds is not a quiet success:
    the rules close the breaker (the dependency works), recorded with its cause."""
    await store.set_breaker_rule("job", Breaker(failures=1, cool_down=30))
    for _ in range(2):
        await enqueue_one(store, T0)
    early, late = await claim(store, at(1), limit=2)
    await store.complete([_failed(early)], at(2))
    assert await _state(store) is BreakerState.OPEN
    assert await store.complete([succeeded(late)], at(3)) == {late.run_id}
    assert await _state(store) is BreakerState.CLOSED
    assert (await store.breaker_transitions(1))[0].cause == "a probe succeeded"


async def test_a_breaker_is_listed_to_the_namespaces_whose_runs_moved_it(store: Store) -> None:
    """Issue 31: a breaker is keyed by handler (and key), so team-a's failures opened
    a breaker team-b's admins could read, with its tenant-chosen key and causes. Now
    each is listed to the namespaces whose runs moved it; None (cluster reach): all."""
    await store.set_breaker_rule("job", RULE)
    await _fail_five(store, namespace="team-a", breaker_key="acme")
    await enqueue_one(store, T0, namespace="team-c")
    [claimed] = await store.claim(_request(), at(6))
    await store.complete([retrying(claimed, delay=0.0)], at(6))  # team-c's: its own breaker
    everyone = {(b.handler, b.key) for b in await store.list_breakers()}
    assert everyone == {("job", "acme"), ("job", "")}
    assert [b.key for b in await store.list_breakers(["team-a"])] == ["acme"]
    assert [b.key for b in await store.list_breakers(["team-c", "team-x"])] == [""]
    assert await store.list_breakers(["team-b"]) == []
    assert len(await store.breaker_transitions(10, ["team-a"])) == 1
    assert await store.breaker_transitions(10, ["team-b"]) == []
    assert len(await store.breaker_transitions(10)) == 1
