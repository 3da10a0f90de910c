"""Which minutes the leader counts (domain.stats.recount): pure."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from rota.domain.stats import FINISHED_KEEP, FINISHED_RECOUNT, minute_ceil, minute_floor, recount

NOW = datetime(2030, 1, 1, 12, 10, 30, tzinfo=UTC)


def test_the_first_count_covers_all_that_is_kept() -> None:
    plan = recount(NOW, None, None)
    assert plan.until == datetime(2030, 1, 1, 12, 9, tzinfo=UTC)  # a minute to settle
    assert plan.start == plan.keep_since == plan.counted_from == plan.until - FINISHED_KEEP


def test_later_counts_recount_the_last_minutes_and_keep_coverage() -> None:
    counted_from = NOW - timedelta(hours=1)
    plan = recount(NOW, counted_from, datetime(2030, 1, 1, 12, 8, tzinfo=UTC))
    assert plan.start == datetime(2030, 1, 1, 12, 8, tzinfo=UTC) - FINISHED_RECOUNT
    assert plan.counted_from == counted_from


def test_after_a_long_gap_everything_kept_is_counted_again() -> None:
    plan = recount(NOW, NOW - timedelta(days=2), NOW - timedelta(days=1))
    assert plan.start == plan.counted_from == plan.until - FINISHED_KEEP


def test_minute_edges() -> None:
    edge = datetime(2030, 1, 1, 12, 10, tzinfo=UTC)
    assert minute_floor(edge) == minute_ceil(edge) == edge
    assert minute_ceil(edge + timedelta(seconds=0.5)) == edge + timedelta(minutes=1)
