"""Enqueue: ids in input order, idempotency keys, the COPY path, run_at defaults."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from datetime import timedelta, timezone

import pytest

from rota.domain.runs import RunFilter
from rota.domain.states import RunState
from rota.store.port import Store
from rota.store.postgres import COPY_THRESHOLD

from .support import T0, at, bounded, claim, claim_one, enqueue_one, new_run, peers


async def test_enqueue_returns_ids_in_input_order(store: Store) -> None:
    runs = [new_run(payload=json.dumps({"i": i}), priority=1 + i % 10) for i in range(7)]
    enqueued = await store.enqueue(runs, T0)
    assert [e.created for e in enqueued] == [True] * 7
    ids = [e.run_id for e in enqueued]
    assert len(set(ids)) == 7
    for i, run_id in enumerate(ids):
        run = await store.get_run(run_id)
        assert run is not None
        assert run.payload == {"i": i}
        assert run.priority == 1 + i % 10


async def test_enqueue_nothing_returns_nothing(store: Store) -> None:
    assert await store.enqueue([], T0) == []


async def test_new_run_row_has_the_given_fields(store: Store) -> None:
    run_id = await enqueue_one(
        store,
        T0,
        handler="send_mail",
        payload='{"to":"a@b.c","n":[1,2]}',
        queue="mail",
        priority=7,
        max_attempts=5,
        timeout=12.5,
        idempotency_key="k-1",
        namespace="tenant-a",
    )
    run = await store.get_run(run_id)
    assert run is not None
    assert (run.handler, run.queue, run.namespace) == ("send_mail", "mail", "tenant-a")
    assert run.payload == {"to": "a@b.c", "n": [1, 2]}
    assert (run.priority, run.max_attempts, run.timeout) == (7, 5, 12.5)
    assert run.idempotency_key == "k-1"
    assert run.state is RunState.PENDING
    assert (run.attempt, run.fence, run.lost_count) == (0, 0, 0)
    assert run.created_at == T0
    assert run.worker_id is None
    assert run.lease_expires_at is None
    assert run.started_at is None
    assert run.finished_at is None
    assert run.result is None
    assert run.error is None
    assert run.cancel_requested is False
    assert run.replay_of is None


async def test_get_run_of_unknown_id_is_none(store: Store) -> None:
    assert await store.get_run(424242) is None


async def test_repeated_idempotency_key_returns_the_existing_run(store: Store) -> None:
    [first] = await store.enqueue([new_run(idempotency_key="once", payload='{"v":1}')], T0)
    [again] = await store.enqueue([new_run(idempotency_key="once", payload='{"v":2}')], at(5))
    assert first.created is True
    assert again.created is False
    assert again.run_id == first.run_id
    run = await store.get_run(first.run_id)
    assert run is not None
    assert run.payload == {"v": 1}  # the first enqueue wins; the repeat changes nothing
    assert run.created_at == T0


async def test_idempotency_key_is_scoped_by_namespace_and_handler(store: Store) -> None:
    enqueued = await store.enqueue(
        [
            new_run(handler="a", idempotency_key="k"),
            new_run(handler="b", idempotency_key="k"),
            new_run(handler="a", idempotency_key="k", namespace="other"),
        ],
        T0,
    )
    assert [e.created for e in enqueued] == [True, True, True]
    assert len({e.run_id for e in enqueued}) == 3
    for enq, (handler, namespace) in zip(
        enqueued, [("a", "default"), ("b", "default"), ("a", "other")], strict=True
    ):
        run = await store.get_run(enq.run_id)
        assert run is not None
        assert (run.handler, run.namespace) == (handler, namespace)


async def test_repeated_key_within_one_batch(store: Store) -> None:
    enqueued = await store.enqueue(
        [
            new_run(idempotency_key="x", payload='{"i":0}'),
            new_run(payload='{"i":1}'),
            new_run(idempotency_key="x", payload='{"i":2}'),
            new_run(idempotency_key="y", payload='{"i":3}'),
            new_run(idempotency_key="x", payload='{"i":4}'),
        ],
        T0,
    )
    assert [e.created for e in enqueued] == [True, True, False, True, False]
    ids = [e.run_id for e in enqueued]
    assert ids[0] == ids[2] == ids[4]
    assert len({ids[0], ids[1], ids[3]}) == 3
    payloads = []
    for run_id in (ids[0], ids[1], ids[3]):
        run = await store.get_run(run_id)
        assert run is not None
        payloads.append(run.payload)
    assert payloads == [{"i": 0}, {"i": 1}, {"i": 3}]


async def test_repeated_key_across_batches_mixed_with_new_runs(store: Store) -> None:
    first = await store.enqueue([new_run(idempotency_key="a"), new_run(idempotency_key="b")], T0)
    second = await store.enqueue(
        [
            new_run(idempotency_key="c"),
            new_run(idempotency_key="b"),
            new_run(),
            new_run(idempotency_key="a"),
        ],
        at(1),
    )
    assert [e.created for e in second] == [True, False, True, False]
    assert second[1].run_id == first[1].run_id
    assert second[3].run_id == first[0].run_id
    assert second[0].run_id not in {e.run_id for e in first}
    assert second[2].run_id not in {e.run_id for e in first}
    assert second[0].run_id != second[2].run_id


async def test_large_keyed_batch_keeps_order_and_dedupes(store: Store) -> None:
    # Keys force the INSERT path on PostgreSQL even above the COPY threshold.
    runs = [
        new_run(payload=json.dumps({"i": i}), idempotency_key=f"k{i % 150}" if i % 2 else None)
        for i in range(COPY_THRESHOLD + 50)
    ]
    enqueued = await store.enqueue(runs, T0)
    assert len(enqueued) == len(runs)
    first_id_of_key: dict[str, int] = {}
    for run, enq in zip(runs, enqueued, strict=True):
        key = run.idempotency_key
        if key is None or key not in first_id_of_key:
            assert enq.created, run
            if key is not None:
                first_id_of_key[key] = enq.run_id
            stored = await store.get_run(enq.run_id)
            assert stored is not None
            assert stored.payload == json.loads(run.payload_json)
            assert stored.idempotency_key == key
        else:
            assert not enq.created, run
            assert enq.run_id == first_id_of_key[key]


async def test_large_batch_keeps_every_field_as_one_insert_does(store: Store) -> None:
    """COPY (PostgreSQL, binary) and the one-row INSERT write the same run, option for
    option: each run of a large batch reads back equal to its twin enqueued alone."""

    def fields(i: int) -> dict[str, object]:
        if i % 2:
            return {"payload": json.dumps({"i": i, "text": "tab\t \\ \u00e9 \U0001f600"})}
        return {
            "payload": json.dumps([i, None, {"nested": "\n"}]),
            "queue": "bulk",
            "priority": 1 + i % 10,
            "run_at": at(i),
            "max_attempts": 2,
            "timeout": 1.5,
            "replay_of": 7,
            "slot_at": at(-i),
            "tags": ("gpu", f"t{i % 3}"),
            "concurrency_key": f"k{i % 4}",
            "concurrency_limit": 3,
            "deadline": at(3600),
            "correlation_id": f"req-{i}",
            "trace_context": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "rate_key": "host-a",
            "breaker_key": "host-b",
        }

    count = COPY_THRESHOLD + 10
    batch = await store.enqueue([new_run(**fields(i)) for i in range(count)], T0)
    for i in (0, 1, 2, 3, count - 1):
        [alone] = await store.enqueue([new_run(**fields(i))], T0)
        copied, inserted = await store.get_run(batch[i].run_id), await store.get_run(alone.run_id)
        assert copied is not None
        assert inserted is not None
        assert replace(copied, id=0) == replace(inserted, id=0), i
        if store.supports_copy:  # columns a Run does not carry, read from the table
            assert await _raw_keys(store, batch[i].run_id) == await _raw_keys(store, alone.run_id)


async def _raw_keys(store: Store, run_id: int) -> tuple[object, ...]:
    async with store._d.connection() as conn:  # type: ignore[attr-defined]
        cur = await conn.execute(
            "SELECT rate_key, breaker_key, payload::text FROM rota_runs WHERE id = %s", (run_id,)
        )
        row: tuple[object, ...] = await cur.fetchone()
        return row


async def test_large_unkeyed_batch(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """On PostgreSQL a big unkeyed batch goes through COPY; the contract is the same."""
    copies: list[int] = []
    if store.supports_copy:
        dialect = type(store._d)  # type: ignore[attr-defined]
        original = dialect.copy_runs

        async def spy(self, runs, aging_seconds, now):
            copies.append(len(runs))
            return await original(self, runs, aging_seconds, now)

        monkeypatch.setattr(dialect, "copy_runs", spy)
    count = COPY_THRESHOLD + 50
    runs = [
        new_run(
            handler=f"h{i % 3}",
            payload=json.dumps({"i": i}),
            queue="bulk",
            priority=1 + i % 10,
            run_at=None if i % 4 else at(-i),
            max_attempts=1 + i % 5,
            timeout=None if i % 2 else float(i + 1),
        )
        for i in range(count)
    ]
    enqueued = await store.enqueue(runs, T0)
    if store.supports_copy:
        assert copies == [count], "expected the COPY path"
    assert all(e.created for e in enqueued)
    ids = [e.run_id for e in enqueued]
    assert ids == sorted(ids)
    assert len(set(ids)) == count
    for i, run_id in enumerate(ids):
        run = await store.get_run(run_id)
        assert run is not None
        assert run.payload == {"i": i}
        assert run.handler == f"h{i % 3}"
        assert (run.queue, run.priority, run.max_attempts) == ("bulk", 1 + i % 10, 1 + i % 5)
        assert run.timeout == (None if i % 2 else float(i + 1))
        assert run.run_at == (T0 if i % 4 else at(-i))
        assert run.created_at == T0
        assert (run.state, run.attempt, run.fence) == (RunState.PENDING, 0, 0)

    # sort_at was written too: the claim takes the ten best by run_at - priority * aging.
    aging = store.aging_seconds
    sort_key = {
        run_id: ((run.run_at or T0).timestamp() - run.priority * aging, run_id)
        for run_id, run in zip(ids, runs, strict=True)
    }
    best = sorted(ids, key=sort_key.__getitem__)[:10]
    claimed = await claim(store, T0, limit=10, queues=["bulk"])
    assert {c.run_id for c in claimed} == set(best)


async def test_run_at_none_means_now(store: Store) -> None:
    run_id = await enqueue_one(store, at(100), run_at=None)
    run = await store.get_run(run_id)
    assert run is not None
    assert run.run_at == at(100)
    assert run.created_at == at(100)


async def test_future_run_at_is_not_claimable_until_now_passes_it(store: Store) -> None:
    run_id = await enqueue_one(store, T0, run_at=at(60))
    assert await claim(store, T0) == []
    assert await claim(store, at(59)) == []
    claimed = await claim_one(store, at(60))
    assert claimed.run_id == run_id


async def test_concurrent_enqueues_of_one_key_create_one_run(store: Store) -> None:
    async with peers(store, 8) as producers:
        results = await bounded(
            asyncio.gather(
                *(
                    p.enqueue([new_run(idempotency_key="race", payload=json.dumps({"p": i}))], T0)
                    for i, p in enumerate(producers)
                )
            )
        )
    enqueued = [e for [e] in results]
    assert len({e.run_id for e in enqueued}) == 1
    assert sum(e.created for e in enqueued) == 1
    assert len(await store.list_runs(RunFilter())) == 1


async def test_instants_in_other_zones_mean_the_same_instant(store: Store) -> None:
    plus_five = timezone(timedelta(hours=5))
    run_id = await enqueue_one(store, T0.astimezone(plus_five), run_at=at(60).astimezone(plus_five))
    run = await store.get_run(run_id)
    assert run is not None
    assert (run.run_at, run.created_at) == (at(60), T0)
    assert run.run_at.utcoffset() == timedelta(0)  # read back in UTC
    assert await claim(store, at(59).astimezone(plus_five)) == []
    assert (await claim_one(store, at(60).astimezone(plus_five))).run_id == run_id


@pytest.mark.parametrize("in_caller_transaction", [False, True])
async def test_a_copy_cut_off_midway_writes_nothing(
    store: Store, monkeypatch: pytest.MonkeyPatch, in_caller_transaction: bool
) -> None:
    """COPY sends its rows in chunks; a failure after the first chunk reached the server
    leaves no run behind, whether the COPY ran alone (autocommit: one statement) or
    inside a caller's transaction (a savepoint), and the connection stays usable."""
    if not store.supports_copy:
        pytest.skip("COPY is PostgreSQL's")
    from rota.store.postgres import session

    monkeypatch.setattr(session, "COPY_CHUNK_ROWS", 100)
    original = session._RowEncoder.rows
    chunks: list[int] = []

    def second_chunk_fails(self: object, ids: list[int], runs: list[object]) -> bytes:
        chunks.append(len(runs))
        if len(chunks) == 2:
            raise RuntimeError("cut off")
        return original(self, ids, runs)  # type: ignore[arg-type]

    monkeypatch.setattr(session._RowEncoder, "rows", second_chunk_fails)
    runs = [new_run(payload=json.dumps({"i": i})) for i in range(COPY_THRESHOLD + 50)]
    dialect = store._d  # type: ignore[attr-defined]

    async def copy() -> list[int]:
        if in_caller_transaction:
            return await dialect.in_transaction(T0, lambda s: s.copy_runs(runs, 1.0))  # type: ignore[no-any-return]
        return await dialect.copy_runs(runs, 1.0, T0)  # type: ignore[no-any-return]

    with pytest.raises(RuntimeError, match="cut off"):
        await copy()
    assert chunks == [100, 100]
    assert await store.list_runs(RunFilter()) == []
    monkeypatch.undo()
    assert len(await store.enqueue(runs, T0)) == len(runs)
