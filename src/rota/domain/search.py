"""Searching runs: filters, free text and keyset pagination, as one value for the store;
and the label rule a job listing applies in memory."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from rota.domain.labels import Labels
from rota.domain.states import RunState


@dataclass(frozen=True)
class RunSearch:
    """Runs newest first (by id). Every filter is optional; ``before_id`` is the keyset
    cursor: only runs with a smaller id, so a page never shifts under concurrent
    inserts the way an OFFSET would."""

    namespaces: tuple[str, ...] | None = None  # None: every namespace
    states: tuple[RunState, ...] = ()  # empty: every state
    handler: str | None = None
    queue: str | None = None
    tag: str | None = None
    job_id: int | None = None
    created_after: datetime | None = None  # inclusive
    created_before: datetime | None = None  # exclusive
    text: str | None = None  # substring of the handler, the job's name or the error
    owner: str | None = None
    labels: Labels = ()  # every one must match (key and value)
    priority: int | None = None
    before_id: int | None = None
    limit: int = 50


def like_pattern(text: str) -> str:
    """A LIKE pattern matching ``text`` anywhere, with its wildcards escaped (by \\)."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def holds_labels(held: Labels, wanted: Labels) -> bool:
    """Whether every wanted label (key and value) is among those held: the containment
    the stores test on a run's labels, for values already in memory (a job's spec)."""
    return set(wanted) <= set(held)
