"""The pure limit decision the stores call while claims are serialised."""

from __future__ import annotations

import pytest

from rota.domain.limits import Active, Candidate, Limit, Limits, LimitScope, choose
from rota.errors import InvalidArgument


def _c(
    run_id: int,
    queue: str = "q",
    handler: str = "h",
    key: str | None = None,
    limit: int | None = None,
) -> Candidate:
    return Candidate(run_id, queue, handler, key, limit)


def test_no_limits_takes_the_first_in_order():
    assert choose([_c(1), _c(2), _c(3)], Active(), Limits(), 2) == [1, 2]


def test_key_limits_count_what_runs_and_what_this_claim_takes():
    active = Active()
    active.add("q", "h", "k", 2)
    chosen = choose(
        [_c(1, key="k", limit=2), _c(2, key="k", limit=2), _c(3, key="j")], active, Limits(), 10
    )
    assert chosen == [1, 3]


def test_handler_queue_and_global_caps():
    limits = Limits(global_max=3, queues={"slow": 1}, handlers={"single": 1})
    candidates = [
        _c(1, handler="single"),
        _c(2, handler="single"),
        _c(3, queue="slow"),
        _c(4, queue="slow"),
        _c(5),
        _c(6),
    ]
    assert choose(candidates, Active(), limits, 10) == [1, 3, 5]


def test_full_groups_are_reported_for_the_query():
    limits = Limits(queues={"a": 1}, handlers={"h": 2})
    active = Active()
    active.add("a", "h", "k", 1)
    active.add("b", "h", None, None)
    assert active.full_queues(limits) == ["a"]
    assert active.full_handlers(limits) == ["h"]
    assert active.full_keys() == ["k"]
    assert not active.global_full(limits)


@pytest.mark.parametrize(
    ("scope", "name", "count", "message"),
    [
        ("planet", "x", 1, "limit scope"),
        ("global", "x", 1, "'\\*'"),
        ("queue", "bad name", 1, "queue name"),
        ("handler", "h", 0, "max_running"),
    ],
)
def test_bad_limits_are_refused(scope, name, count, message):
    with pytest.raises(InvalidArgument, match=message):
        Limit.parse(scope, name, count)


def test_a_good_limit():
    assert Limit.parse("global", "*", 5) == Limit(LimitScope.GLOBAL, "*", 5)
