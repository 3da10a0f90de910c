"""The charts' rollup rules (domain.charts): which minutes a batch counts, which bars a
range reads, pickup-delay quantiles from fixed buckets. Pure."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from rota.domain.charts import (
    CHART_BATCH,
    CHART_HOURS_KEEP,
    CHART_MINUTES_KEEP,
    CHART_RECOUNT,
    ChartBar,
    ChartKey,
    ChartRange,
    chart_batch,
    chart_read,
    chart_window,
    delay_quantile,
)
from rota.domain.stats import minute_ceil, minute_floor

NOW = datetime(2030, 1, 8, 12, 10, 30, tzinfo=UTC)
SETTLED = datetime(2030, 1, 8, 12, 9, tzinfo=UTC)


def test_the_first_batch_starts_eight_days_back_and_is_bounded() -> None:
    batch = chart_batch(NOW, None)
    assert batch.start == batch.hour_start == batch.hours_keep_since
    assert batch.hours_keep_since == datetime(2029, 12, 31, 12, tzinfo=UTC)
    assert SETTLED - CHART_HOURS_KEEP - batch.start < timedelta(hours=1)
    assert batch.until == batch.start + CHART_BATCH
    assert not batch.caught_up
    # The minutes of the hour being summed stay, however old.
    assert batch.minutes_keep_since == batch.hour_start


def test_batches_move_forward_until_caught_up_then_recount_the_last_minutes() -> None:
    counted_until = None
    for _ in range(8 * 24 + 2):  # a batch an hour
        batch = chart_batch(NOW, counted_until)
        assert counted_until is None or batch.until > counted_until or batch.caught_up
        counted_until = batch.until
        if batch.caught_up:
            break
    assert batch.caught_up
    assert batch.until == SETTLED
    again = chart_batch(NOW, counted_until)
    assert again.start == SETTLED - CHART_RECOUNT
    assert again.until == SETTLED
    assert again.hour_start == datetime(2030, 1, 8, 12, tzinfo=UTC)
    assert again.hour_until == datetime(2030, 1, 8, 13, tzinfo=UTC)
    assert again.minutes_keep_since == SETTLED - CHART_MINUTES_KEEP


def test_counted_from_follows_the_first_batch_then_what_is_kept() -> None:
    counted_from, counted_until = None, None
    for _ in range(8 * 24 + 2):
        batch = chart_batch(NOW, counted_until, counted_from)
        if counted_from is None:
            assert batch.counted_from == batch.start  # the first count starts there
        assert batch.counted_from >= batch.minutes_keep_since  # older minutes are dropped
        counted_from, counted_until = batch.counted_from, batch.until
        if batch.caught_up:
            break
    assert counted_from == SETTLED - CHART_MINUTES_KEEP
    again = chart_batch(NOW, counted_until, counted_from)
    assert again.counted_from == counted_from


def test_counted_from_not_known_starts_at_the_batch() -> None:
    # A database counted before schema version 33: only what this batch counts is known.
    batch = chart_batch(NOW, SETTLED, None)
    assert batch.counted_from == batch.start == SETTLED - CHART_RECOUNT
    # After a gap longer than the hours kept, what was counted before is not kept.
    gap = chart_batch(NOW, SETTLED - timedelta(days=9), SETTLED - timedelta(days=10))
    assert gap.counted_from == gap.start == gap.hours_keep_since


def test_minute_edges() -> None:
    edge = datetime(2030, 1, 1, 12, 10, tzinfo=UTC)
    assert minute_floor(edge) == minute_ceil(edge) == edge
    assert minute_ceil(edge + timedelta(seconds=0.5)) == edge + timedelta(minutes=1)


def test_a_batch_across_an_hour_keeps_the_minutes_of_both_hours() -> None:
    # Counted until 11:59, settled until 12:01: the batch counts 11:59 and 12:00.
    batch = chart_batch(
        datetime(2030, 1, 8, 12, 2, 30, tzinfo=UTC), SETTLED.replace(hour=11, minute=59)
    )
    assert batch.start == datetime(2030, 1, 8, 11, 59, tzinfo=UTC)
    assert batch.until == datetime(2030, 1, 8, 12, 1, tzinfo=UTC)
    assert batch.hour_start == datetime(2030, 1, 8, 11, tzinfo=UTC)
    assert batch.hour_until == datetime(2030, 1, 8, 13, tzinfo=UTC)


@pytest.mark.parametrize(
    ("chart_range", "bars", "bucket"),
    [(ChartRange.HOUR, 60, 60), (ChartRange.DAY, 96, 900), (ChartRange.WEEK, 168, 3600)],
)
def test_windows_end_at_what_is_counted(chart_range: ChartRange, bars: int, bucket: int) -> None:
    window = chart_window(chart_range, SETTLED)
    assert (window.bars, window.bucket_seconds, window.until) == (bars, bucket, SETTLED)
    last = window.since + timedelta(seconds=bucket * (bars - 1))
    assert last <= SETTLED - timedelta(seconds=1) < last + timedelta(seconds=bucket)


def test_delay_quantiles_are_the_bucket_bounds() -> None:
    assert delay_quantile((0,) * 6, 0.5) is None
    assert delay_quantile((98, 1, 0, 0, 0, 1), 0.5) == 0.1
    assert delay_quantile((98, 1, 0, 0, 0, 1), 0.99) == 1.0
    assert delay_quantile((0, 0, 0, 0, 0, 3), 0.99) == 600.0  # the open bucket: at least


def test_series_fill_every_bar_in_plain_lists_and_rank_their_keys() -> None:
    window = chart_window(ChartRange.HOUR, SETTLED)
    keys = [ChartKey("ns", "q", 4, 1), ChartKey("ns", "r", 2, 0)]
    bars: list[ChartBar] = [
        (0, 1, 4, 3, 1, 1.5, (2, 2, 0, 0, 0, 0)),
        (59, 0, 2, 2, 0, 0.0, (0,) * 6),
        (-1, 1, 9, 0, 9, 0.0, (0,) * 6),  # a row outside the window is left out
    ]
    read = chart_read(window, keys, bars, top=1)
    [only] = read.series
    assert (only.namespace, only.key, len(only.finished)) == ("ns", "q", 60)
    assert (sum(only.finished), sum(only.failures)) == (4, 1)
    assert only.started[:2] == [4, 0]
    assert only.delay_mean[:2] == [pytest.approx(0.375), None]
    assert (only.delay_p50[0], only.delay_p99[0]) == (0.1, 1.0)
    assert (read.rest.key, read.rest.finished[59], sum(read.rest.finished)) == ("", 2, 2)
