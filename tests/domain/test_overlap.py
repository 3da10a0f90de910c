"""The overlap rule the claim applies to due slot runs (rota.domain.overlap)."""

from __future__ import annotations

from rota.domain.limits import Active, Candidate
from rota.domain.misfire import OverlapPolicy
from rota.domain.overlap import overlap_key, overlap_skips, policy_of

SKIP = overlap_key(OverlapPolicy.SKIP, 7)
BUFFER = overlap_key(OverlapPolicy.BUFFER_ONE, 8)


def _c(run_id: int, key: str | None) -> Candidate:
    return Candidate(run_id, "default", "job", key, None if key is None else 1, None, None)


def test_allow_has_no_key_and_keys_name_their_policy() -> None:
    assert overlap_key(OverlapPolicy.ALLOW, 7) is None
    assert policy_of(SKIP) is OverlapPolicy.SKIP
    assert policy_of(BUFFER) is OverlapPolicy.BUFFER_ONE
    assert policy_of("customer-42") is None
    assert policy_of("rota:overlap:sometimes:7") is None


def test_skip_keeps_the_first_due_run_when_nothing_is_live() -> None:
    assert overlap_skips([_c(1, SKIP), _c(2, SKIP), _c(3, None)], Active()) == [2]


def test_skip_ends_every_due_run_while_one_is_held() -> None:
    active = Active()
    active.add_key(SKIP, 1, 1)
    assert overlap_skips([_c(1, SKIP), _c(2, SKIP)], active) == [1, 2]


def test_buffer_one_keeps_one_waiting_behind_the_live_run() -> None:
    active = Active()
    active.add_key(BUFFER, 1, 1)
    assert overlap_skips([_c(1, BUFFER), _c(2, BUFFER), _c(3, BUFFER)], active) == [2, 3]
    assert overlap_skips([_c(1, BUFFER), _c(2, BUFFER), _c(3, BUFFER)], Active()) == [3]


def test_other_keys_are_left_to_their_limits() -> None:
    active = Active()
    active.add_key("customer-42", 1, 1)
    assert overlap_skips([_c(1, "customer-42"), _c(2, "customer-42")], active) == []
