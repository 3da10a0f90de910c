"""A queue's summary, put together from the reads the cluster already makes (pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from rota.domain.limits import Limit, LimitScope
from rota.domain.queues import QueueControl, check_queue_name, summarize
from rota.domain.states import RunState
from rota.domain.stats import FinishedCount, QueueCount
from rota.domain.workers import WorkerInfo, WorkerState
from rota.errors import InvalidArgument

NOW = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)


def test_depth_oldest_due_throughput_failure_rate_workers_and_controls() -> None:
    live = [
        QueueCount("a", "mail", RunState.PENDING, 3, NOW - 30 * MINUTE),
        QueueCount("b", "mail", RunState.PENDING, 2, NOW - 5 * MINUTE),
        QueueCount("a", "mail", RunState.RUNNING, 1),
        QueueCount("a", "mail", RunState.DEAD_LETTERED, 4),
    ]
    finished = [
        FinishedCount(NOW - 2 * MINUTE, "a", "mail", RunState.SUCCEEDED, 27),
        FinishedCount(NOW - MINUTE, "a", "mail", RunState.DEAD_LETTERED, 2),
        FinishedCount(NOW - MINUTE, "b", "mail", RunState.TIMED_OUT, 1),
        FinishedCount(NOW - MINUTE, "a", "mail", RunState.CANCELLED, 0),
    ]
    workers = [
        WorkerInfo("w2", "h", 1, "0", ("mail",), (), 4),
        WorkerInfo("w1", "h", 1, "0", ("mail", "other"), (), 4, WorkerState.DRAINING),
        WorkerInfo("gone", "h", 1, "0", ("mail",), (), 4, WorkerState.DEAD),
    ]
    controls = [QueueControl("paused-q", True, NOW, "ana")]
    caps = [Limit(LimitScope.QUEUE, "mail", 5), Limit(LimitScope.HANDLER, "mail", 1)]
    found = summarize(NOW, live, finished, workers, controls, caps, window=15 * MINUTE)
    assert [q.name for q in found] == ["mail", "other", "paused-q"]
    mail = found[0]
    assert mail.depth == {
        RunState.PENDING: 5,
        RunState.RETRYING: 0,
        RunState.CLAIMED: 0,
        RunState.RUNNING: 1,
    }
    assert mail.dead_letters == 4
    assert mail.oldest_due_age == 30 * 60
    assert mail.finished == 30
    assert mail.throughput_per_minute == 2.0
    assert mail.failure_rate == pytest.approx(0.1)
    assert mail.workers == ("w1", "w2"), "a dead worker serves nothing"
    assert mail.concurrency_limit == 5, "the queue's cap, not a handler's of the same name"
    assert not mail.control.paused
    assert found[2].control.paused_by == "ana"
    assert found[1].failure_rate is None, "nothing finished: no rate, not 0"
    assert found[1].oldest_due_age is None


@pytest.mark.parametrize("name", ["", "no spaces", "-leading", "x" * 129, 7, None])
def test_a_queue_name_is_checked_and_named_in_the_error(name: object) -> None:
    with pytest.raises(InvalidArgument) as raised:
        check_queue_name(name)
    assert repr(name) in str(raised.value)
    assert "letters, digits" in str(raised.value)
    with pytest.raises(InvalidArgument):
        QueueControl(name, paused=False)  # type: ignore[arg-type]
