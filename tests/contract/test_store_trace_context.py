"""What a claim hands the worker for observability: the trace context stored at enqueue,
the job the run was made for, and how long the run waited after falling due. Same on
SQLite and PostgreSQL, on the single-row, the batched and (PostgreSQL) the COPY path."""

from __future__ import annotations

from rota.domain.states import AttemptOutcome, RunState
from rota.store.port import Store
from rota.store.queries import latest_version

from .support import T0, at, claim, claim_one, finished, new_run

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


async def test_the_schema_is_current(store: Store) -> None:
    status = await store.schema_status()
    assert status.current == latest_version(store.dialect)


async def test_a_claim_returns_the_trace_context_stored_at_enqueue(store: Store) -> None:
    [traced, plain] = await store.enqueue([new_run(trace_context=TRACEPARENT), new_run()], at(0))
    claimed = {c.run_id: c for c in await claim(store, at(7), limit=2)}
    assert claimed[traced.run_id].trace_context == TRACEPARENT
    assert claimed[plain.run_id].trace_context is None
    run = await store.get_run(traced.run_id)
    assert run is not None
    assert run.trace_context == TRACEPARENT


async def test_a_large_batch_keeps_each_runs_trace_context(store: Store) -> None:
    # 250 runs without idempotency keys take PostgreSQL's COPY path.
    contexts = [f"00-{i:032x}-{i:016x}-01" for i in range(1, 251)]
    enqueued = await store.enqueue([new_run(trace_context=c) for c in contexts], at(0))
    for result, context in zip(enqueued, contexts, strict=True):
        run = await store.get_run(result.run_id)
        assert run is not None
        assert run.trace_context == context


async def test_a_claim_says_how_long_the_run_waited_since_it_fell_due(store: Store) -> None:
    await store.enqueue([new_run(run_at=at(5))], T0)
    claimed = await claim_one(store, at(12))
    assert claimed.pickup_delay is not None
    assert abs(claimed.pickup_delay - 7.0) < 0.01


async def test_a_retry_waits_from_its_own_due_time(store: Store) -> None:
    await store.enqueue([new_run()], T0)
    first = await claim_one(store, at(1))
    retry = finished(first, RunState.RETRYING, AttemptOutcome.FAILED)
    await store.complete([retry.__class__(**{**retry.__dict__, "retry_delay": 10.0})], at(2))
    second = await claim_one(store, at(15))
    assert second.pickup_delay is not None
    assert abs(second.pickup_delay - 3.0) < 0.01
    assert second.trace_context is None


async def test_a_replay_continues_the_trace_of_the_run_it_repeats(store: Store) -> None:
    await store.enqueue([new_run(trace_context=TRACEPARENT)], T0)
    claimed = await claim_one(store, at(1))
    await store.complete([finished(claimed, RunState.FAILED, AttemptOutcome.FAILED)], at(2))
    replayed = await store.replay(claimed.run_id, at(3))
    again = await claim_one(store, at(4))
    assert again.run_id == replayed
    assert again.trace_context == TRACEPARENT
