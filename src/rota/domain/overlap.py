"""Overlap of a schedule's runs, decided when a run falls due (ADR 0029).

Every slot's run is planned ahead, whatever the job's overlap policy; a run of a job
whose policy is not ``allow`` carries the job's overlap key (``rota:overlap:<policy>:
<job id>``) with a limit of one, so at most one of its runs is held at a time (the
limited claim keeps keys, ADR 0008). What a key cannot explain, the claim decides here,
over its candidates in claim order: ``skip`` ends a due run Skipped when an earlier run
of its job is still live (held, or due before it); ``buffer_one`` keeps one run waiting
behind the live one and ends the others Skipped.

Pure: the store passes what runs now and the candidates it read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from rota.domain.limits import Active, Candidate
from rota.domain.misfire import OverlapPolicy

OVERLAP_PREFIX = "rota:overlap:"
SKIPPED_REASON = "previous run still live"
# Runs of a job that may be live at once (held or due) before the next is skipped.
_ROOM = {OverlapPolicy.SKIP: 1, OverlapPolicy.BUFFER_ONE: 2}


def overlap_key(policy: OverlapPolicy, job_id: int) -> str | None:
    """The concurrency key a slot run of this job carries; None for ``allow``."""
    if policy is OverlapPolicy.ALLOW:
        return None
    return f"{OVERLAP_PREFIX}{policy.value}:{job_id}"


def policy_of(key: str | None) -> OverlapPolicy | None:
    """The overlap policy an overlap key names; None for any other key."""
    if key is None or not key.startswith(OVERLAP_PREFIX):
        return None
    name = key[len(OVERLAP_PREFIX) :].split(":", 1)[0]
    try:
        policy = OverlapPolicy(name)
    except ValueError:
        return None
    return None if policy is OverlapPolicy.ALLOW else policy


def overlap_skips(candidates: Iterable[Candidate], active: Active) -> list[int]:
    """The candidates (in claim order) their job's overlap policy ends Skipped.

    ``active`` holds the runs of each key claimed or running now (read before any
    candidate is chosen). A candidate kept counts as live for the ones after it: it is
    either chosen now or waits for the key."""
    kept: Counter[str] = Counter()
    skipped: list[int] = []
    for c in candidates:
        policy = policy_of(c.concurrency_key)
        if policy is None or c.concurrency_key is None:
            continue
        key = c.concurrency_key
        if active.keys[key] + kept[key] >= _ROOM[policy]:
            skipped.append(c.run_id)
        else:
            kept[key] += 1
    return skipped
