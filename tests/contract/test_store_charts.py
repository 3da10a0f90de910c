"""The charts' rollup (domain/charts.py): the leader's batches count every finished run
once, with its handler and pickup delay, even across a batch that died before its
commit; the same numbers on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

import pytest

from rota.domain.charts import ChartBy, ChartCount, ChartRange, series
from rota.domain.states import AttemptOutcome, RunState
from rota.store.port import Store

from .support import T0, at, bounded, claim_one, finished, new_run, peers, succeeded

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
    batches = 1
    while not (await store.count_chart_batch(now)).caught_up:
        batches += 1
        assert batches < 500, "the rollup never caught up"
    return batches


def _totals(counts: list[ChartCount]) -> dict[str, tuple[int, int, int, tuple[int, ...]]]:
    """Per key, over all bars: finished, succeeded, failures and the delay buckets."""
    sums: dict[str, tuple[int, int, int, tuple[int, ...]]] = {}
    for c in counts:
        n, ok, bad, buckets = sums.get(c.key, (0, 0, 0, (0,) * len(c.delay_buckets)))
        sums[c.key] = (
            n + c.count,
            ok + c.succeeded,
            bad + c.failures,
            tuple(a + b for a, b in zip(buckets, c.delay_buckets, strict=True)),
        )
    return sums


async def _runs(store: Store) -> None:
    await _finish(store, 30, 0.05)  # h1 q1, waited <= 0.1 s
    await _finish(store, 90, 5, handler="h2")  # (1 s, 10 s]
    await _finish(store, 95, 30, handler="h2", failed=True)  # (10 s, 60 s]
    await _finish(store, 400, 120, queue="q2")  # (60 s, 600 s]


async def test_every_finished_run_is_counted_once_by_queue_and_handler(store: Store) -> None:
    assert await store.chart_counts(ChartRange.HOUR, ChartBy.QUEUE) == (None, [])
    await _runs(store)
    assert await _count_all(store) > 1  # the first count goes back 8 days, in batches
    window, by_queue = await store.chart_counts(ChartRange.HOUR, ChartBy.QUEUE)
    assert window is not None
    assert window.until == at(600)
    assert window.bars == 60
    assert _totals(by_queue) == {
        "q1": (3, 2, 1, (1, 0, 1, 1, 0, 0)),
        "q2": (1, 1, 0, (0, 0, 0, 0, 1, 0)),
    }
    _, by_handler = await store.chart_counts(ChartRange.HOUR, ChartBy.HANDLER)
    assert _totals(by_handler) == {
        "h1": (2, 2, 0, (1, 0, 0, 0, 1, 0)),
        "h2": (2, 1, 1, (0, 0, 1, 1, 0, 0)),
    }
    h2 = [c for c in by_handler if c.key == "h2"]
    assert [(c.bucket_start, c.delay_sum) for c in h2] == [(at(60), pytest.approx(35.0))]
    # The day's and the week's charts say the same in wider bars (the week from hours).
    for wide in (ChartRange.DAY, ChartRange.WEEK):
        window, counts = await store.chart_counts(wide, ChartBy.HANDLER)
        assert _totals(counts) == _totals(by_handler), wide
        assert window is not None
        [h2_series] = [s for s in series(counts, window) if s.key == "h2"]
        assert (h2_series.finished, h2_series.failures) == (2, 1)


async def test_counting_again_counts_nothing_twice(store: Store) -> None:
    await _runs(store)
    await _count_all(store)
    before = await store.chart_counts(ChartRange.WEEK, ChartBy.QUEUE)
    await _count_all(store)  # the same instant again: the last minutes are recounted
    later = NOW + timedelta(minutes=3)
    await _count_all(store, later)  # and later: the recount window overlaps
    assert _totals((await store.chart_counts(ChartRange.WEEK, ChartBy.QUEUE))[1]) == _totals(
        before[1]
    )
    # A run that finished late inside the recount window is counted by the next batch.
    await _finish(store, 590, 0.01, queue="q3")
    await _count_all(store, later + timedelta(minutes=1))
    _, counts = await store.chart_counts(ChartRange.HOUR, ChartBy.QUEUE)
    assert _totals(counts)["q3"] == (1, 1, 0, (1, 0, 0, 0, 0, 0))


class _Crash(Exception):
    pass


async def test_a_batch_that_dies_before_its_commit_counts_nothing(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _runs(store)
    await _count_all(store, at(300))  # counted up to T0 + 4 min
    before = await store.chart_counts(ChartRange.HOUR, ChartBy.QUEUE)
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
    assert await store.chart_counts(ChartRange.HOUR, ChartBy.QUEUE) == before
    await _count_all(store)
    _, counts = await store.chart_counts(ChartRange.HOUR, ChartBy.QUEUE)
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
    _, counts = await store.chart_counts(ChartRange.HOUR, ChartBy.QUEUE)
    assert sum(n for n, *_ in _totals(counts).values()) == 4  # each run once
