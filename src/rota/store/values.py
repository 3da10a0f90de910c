"""Values the store port takes and returns that belong to no domain concept: a claim's
request, the schema's version, the leader's lease and its terms. Imported from
:mod:`rota.store.port` as well (where they were first written)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class ClaimRequest:
    worker_id: str
    queues: tuple[str, ...]
    limit: int
    lease_seconds: float
    tags: tuple[str, ...] = ()  # the worker's tags: it may claim runs needing a subset


@dataclass(frozen=True)
class SchemaStatus:
    current: int
    latest: int

    @property
    def up_to_date(self) -> bool:
        return self.current == self.latest


@dataclass(frozen=True)
class LeaderInfo:
    holder: str
    term: int
    acquired_at: datetime
    expires_at: datetime


@dataclass(frozen=True)
class LeaderTerm:
    """One leadership term: who took it and when (it lasted until the next began)."""

    term: int
    holder: str
    acquired_at: datetime
