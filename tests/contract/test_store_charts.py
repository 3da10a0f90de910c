"""The charts' rollup (domain/charts.py): the leader's batches count every finished run
once, with its handler and pickup delay, even across a batch that died before its
commit; one read serves every range, summing the top keys apart and the rest as one,
of the namespaces asked; the same numbers on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

import pytest

from rota.domain.charts import CHART_TOP_MAX, ChartAsk, ChartBy, ChartRange, ChartRead
from rota.domain.states import AttemptOutcome, RunState
from rota.store.port import Store

from .support import (
    T0,
    at,
    bounded,
    claim_one,
    count_finished,
    finished,
    new_run,
    peers,
    succeeded,
)

NOW = at(660)  # the minutes before T0 + 10 min have settled


async def _finish(
    store: Store,
    finished_at: float,
    waited: float,
    *,
    queue: str = "q1",
    handler: str = "h1",
    failed: bool = False,
) -> None:
    """One run due at T0, picked up ``waited`` seconds later, finished at T0 + finished_at."""
    await store.enqueue([new_run(handler=handler, queue=queue)], T0)
    claimed = await claim_one(store, at(waited), queues=[queue])
    outcome = (
        finished(claimed, RunState.FAILED, AttemptOutcome.FAILED) if failed else succeeded(claimed)
    )
    await store.complete([outcome], at(finished_at))


async def _count_all(store: Store, now: datetime = NOW) -> int:
    return await count_finished(store, now)


async def _read(store: Store, chart_range: ChartRange, by: ChartBy, **ask: Any) -> ChartRead | None:
    return await store.chart_read(ChartAsk(chart_range, by, **{"top": CHART_TOP_MAX, **ask}))


Totals = dict[str, tuple[int, int, int, tuple[int, ...]]]


def _totals(read: ChartRead | None) -> Totals:
    """Per key, over all bars: finished, succeeded, failures and the delay buckets."""
    assert read is not None
    return {
        s.key: (
            sum(s.finished),
            sum(s.succeeded),
            sum(s.failures),
            tuple(sum(bucket) for bucket in zip(*s.delay_buckets, strict=True)),
        )
        for s in read.series
    }


async def _runs(store: Store) -> None:
    await _finish(store, 30, 0.05)  # h1 q1, waited <= 0.1 s
    await _finish(store, 90, 5, handler="h2")  # (1 s, 10 s]
    await _finish(store, 95, 30, handler="h2", failed=True)  # (10 s, 60 s]
    await _finish(store, 400, 120, queue="q2")  # (60 s, 600 s]


async def test_every_finished_run_is_counted_once_by_queue_and_handler(store: Store) -> None:
    assert await _read(store, ChartRange.HOUR, ChartBy.QUEUE) is None
    await _runs(store)
    assert await _count_all(store) > 1  # the first count goes back 8 days, in batches
    by_queue = await _read(store, ChartRange.HOUR, ChartBy.QUEUE)
    assert by_queue is not None
    assert by_queue.window.until == at(600)
    assert by_queue.window.bars == 60
    assert _totals(by_queue) == {
        "q1": (3, 2, 1, (1, 0, 1, 1, 0, 0)),
        "q2": (1, 1, 0, (0, 0, 0, 0, 1, 0)),
    }
    by_handler = await _read(store, ChartRange.HOUR, ChartBy.HANDLER)
    assert _totals(by_handler) == {
        "h1": (2, 2, 0, (1, 0, 0, 0, 1, 0)),
        "h2": (2, 1, 1, (0, 0, 1, 1, 0, 0)),
    }
    assert by_handler is not None
    [h2] = [s for s in by_handler.series if s.key == "h2"]
    since = by_handler.window.since
    bars = [(since + timedelta(minutes=i), d) for i, d in enumerate(h2.delay_sum) if d]
    assert bars == [(at(60), pytest.approx(35.0))]
    # The day's and the week's charts say the same in wider bars (the week from hours):
    # one read, its level chosen by the range.
    for wide in (ChartRange.DAY, ChartRange.WEEK):
        read = await _read(store, wide, ChartBy.HANDLER)
        assert _totals(read) == _totals(by_handler), wide
        assert read is not None
        assert [(k.key, k.finished, k.failures) for k in read.keys] == [
            ("h1", 2, 0),
            ("h2", 2, 1),
        ]


async def test_counting_again_counts_nothing_twice(store: Store) -> None:
    await _runs(store)
    await _count_all(store)
    before = await _read(store, ChartRange.WEEK, ChartBy.QUEUE)
    await _count_all(store)  # the same instant again: the last minutes are recounted
    later = NOW + timedelta(minutes=3)
    await _count_all(store, later)  # and later: the recount window overlaps
    assert _totals(await _read(store, ChartRange.WEEK, ChartBy.QUEUE)) == _totals(before)
    # A run that finished late inside the recount window (the minute before the one
    # last settled: T0 + 12 min) is counted by a batch before the next minute settles.
    await _finish(store, 750, 0.01, queue="q3")
    await _count_all(store, later + timedelta(seconds=30))
    counts = await _read(store, ChartRange.HOUR, ChartBy.QUEUE)
    assert _totals(counts)["q3"] == (1, 1, 0, (1, 0, 0, 0, 0, 0))


class _Crash(Exception):
    pass


async def test_a_batch_that_dies_before_its_commit_counts_nothing(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _runs(store)
    await _count_all(store, at(300))  # counted up to T0 + 4 min
    before = await _read(store, ChartRange.HOUR, ChartBy.QUEUE)
    dialect: Any = store._d  # type: ignore[attr-defined]  # the seam, to fail inside it
    real = dialect.in_transaction

    async def dying(now: datetime, body: Any) -> Any:
        async def until_the_hours(session: Any) -> Any:
            class Dying:
                async def rows(self, query: str, params: Any = None) -> Any:
                    if query == "count_chart_hours":  # after the minutes were written
                        raise _Crash
                    return await session.rows(query, params)

            return await body(Dying())

        return await real(now, until_the_hours)

    monkeypatch.setattr(dialect, "in_transaction", dying)
    with pytest.raises(_Crash):
        await store.count_chart_batch(NOW)
    monkeypatch.undo()
    assert await _read(store, ChartRange.HOUR, ChartBy.QUEUE) == before
    await _count_all(store)
    counts = await _read(store, ChartRange.HOUR, ChartBy.QUEUE)
    assert sum(n for n, *_ in _totals(counts).values()) == 4  # each run once


async def test_overlapping_leaders_count_one_batch_after_the_other(store: Store) -> None:
    await _runs(store)
    await _count_all(store, at(300))
    async with peers(store, 1) as [other]:
        for later in range(0, 300, 20):  # every turn of both: the same batch at once
            now = NOW + timedelta(seconds=later)
            await bounded(
                asyncio.gather(store.count_chart_batch(now), other.count_chart_batch(now))
            )
    counts = await _read(store, ChartRange.HOUR, ChartBy.QUEUE)
    assert sum(n for n, *_ in _totals(counts).values()) == 4  # each run once


async def test_the_top_keys_come_apart_and_the_rest_summed(store: Store) -> None:
    await _runs(store)  # h1: 2 runs, h2: 2 (one failed)
    await _finish(store, 100, 1, handler="h3")
    await _count_all(store)
    for chart_range in ChartRange:  # one read, every level
        read = await _read(store, chart_range, ChartBy.HANDLER, top=1)
        assert read is not None
        # Ranked by runs finished, then by namespace and key.
        assert [(k.key, k.finished, k.failures) for k in read.keys] == [
            ("h1", 2, 0),
            ("h2", 2, 1),
            ("h3", 1, 0),
        ], chart_range
        [h1] = read.series
        assert (h1.key, sum(h1.finished)) == ("h1", 2)
        rest = read.rest
        assert (sum(rest.finished), sum(rest.failures), sum(rest.succeeded)) == (3, 1, 2)
        delays = [sum(bucket) for bucket in zip(*rest.delay_buckets, strict=True)]
        assert delays == [0, 1, 1, 1, 0, 0]  # h3 waited 1 s, h2 5 s and 30 s
        everything = await _read(store, chart_range, ChartBy.HANDLER, top=0)
        assert everything is not None
        assert everything.series == []
        assert sum(everything.rest.finished) == 5
        one = await _read(store, chart_range, ChartBy.HANDLER, top=0, only=("default", "h2"))
        assert one is not None
        assert (sum(one.rest.finished), sum(one.rest.failures)) == (2, 1)
        assert len(one.keys) == 3  # every key still listed


async def test_a_read_sums_only_the_namespaces_asked(store: Store) -> None:
    await store.enqueue([new_run(handler="h1", namespace="elsewhere")], T0)
    claimed = await claim_one(store, at(1))
    await store.complete([succeeded(claimed)], at(30))
    await _finish(store, 40, 1)
    await _count_all(store)
    mine = await _read(store, ChartRange.HOUR, ChartBy.QUEUE, namespaces=frozenset({"default"}))
    assert mine is not None
    assert [(k.namespace, k.finished) for k in mine.keys] == [("default", 1)]
    assert sum(mine.series[0].finished) == 1
    none = await _read(store, ChartRange.HOUR, ChartBy.QUEUE, namespaces=frozenset())
    assert none is not None
    assert (none.keys, none.series, sum(none.rest.finished)) == ([], [], 0)
