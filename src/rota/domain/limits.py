"""Cluster-wide concurrency limits, decided at claim time.

The store gathers what is running now (``Active``) and the candidates in priority
order; :func:`choose` picks the ones that fit every limit. The store calls it while it
holds the claim serialised (an advisory lock on PostgreSQL, BEGIN IMMEDIATE on
SQLite), so no two claimers can both take the last slot of a limit.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from rota.domain.runs import check_name, check_positive_int
from rota.domain.values import one_of
from rota.errors import InvalidArgument


class LimitScope(StrEnum):
    GLOBAL = "global"  # every running run in the cluster (name "*")
    QUEUE = "queue"
    HANDLER = "handler"


@dataclass(frozen=True)
class Limit:
    scope: LimitScope
    name: str
    max_running: int

    @classmethod
    def parse(cls, scope: str, name: str, max_running: int) -> Limit:
        return cls(one_of("limit scope", LimitScope, scope), name, max_running)

    def __post_init__(self) -> None:
        if self.scope is LimitScope.GLOBAL:
            if self.name != "*":
                raise InvalidArgument("global limit name", self.name, "'*'")
        else:
            check_name(f"{self.scope.value} name", self.name)
        check_positive_int("max_running", self.max_running)


@dataclass(frozen=True)
class Limits:
    global_max: int | None = None
    queues: dict[str, int] = field(default_factory=dict)
    handlers: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, limits: list[Limit]) -> Limits:
        global_max = None
        queues: dict[str, int] = {}
        handlers: dict[str, int] = {}
        for limit in limits:
            if limit.scope is LimitScope.GLOBAL:
                global_max = limit.max_running
            elif limit.scope is LimitScope.QUEUE:
                queues[limit.name] = limit.max_running
            else:
                handlers[limit.name] = limit.max_running
        return cls(global_max, queues, handlers)

    @property
    def any(self) -> bool:
        return self.global_max is not None or bool(self.queues) or bool(self.handlers)


@dataclass(frozen=True)
class Candidate:
    run_id: int
    queue: str
    handler: str
    concurrency_key: str | None
    concurrency_limit: int | None
    rate_key: str | None = None
    breaker_key: str | None = None


@dataclass
class Active:
    """Runs claimed or running now, counted per group."""

    total: int = 0
    queues: Counter[str] = field(default_factory=Counter)
    handlers: Counter[str] = field(default_factory=Counter)
    keys: Counter[str] = field(default_factory=Counter)
    # A key's limit as its running runs carry it (keep it the same for every run of a key)
    key_limits: dict[str, int] = field(default_factory=dict)

    def add(
        self, queue: str, handler: str, key: str | None, key_limit: int | None, count: int = 1
    ) -> None:
        self.total += count
        self.queues[queue] += count
        self.handlers[handler] += count
        if key is not None:
            self.add_key(key, key_limit, count)

    def add_key(self, key: str, key_limit: int | None, count: int) -> None:
        """Runs held of one key, when no queue, handler or global limit is set: then
        keys are all a claim checks, and only the keys of its candidates are read."""
        self.keys[key] += count
        limit = key_limit or 1
        self.key_limits[key] = min(self.key_limits.get(key, limit), limit)

    def full_queues(self, limits: Limits) -> list[str]:
        return [q for q, cap in limits.queues.items() if self.queues[q] >= cap]

    def full_handlers(self, limits: Limits) -> list[str]:
        return [h for h, cap in limits.handlers.items() if self.handlers[h] >= cap]

    def full_keys(self) -> list[str]:
        """Keys at their limit: the store's candidate query skips their runs."""
        return [k for k, cap in self.key_limits.items() if self.keys[k] >= cap]

    def global_full(self, limits: Limits) -> bool:
        return limits.global_max is not None and self.total >= limits.global_max


def choose(
    candidates: list[Candidate],
    active: Active,
    limits: Limits,
    want: int,
    admit: Callable[[Candidate], bool] | None = None,
) -> list[int]:
    """The first candidates, in the given (priority) order, that fit every limit.
    ``admit`` (the rate limits) is asked last, and counts the runs it lets through."""
    chosen: list[int] = []
    for c in candidates:
        if len(chosen) >= want:
            break
        if limits.global_max is not None and active.total >= limits.global_max:
            break
        if c.queue in limits.queues and active.queues[c.queue] >= limits.queues[c.queue]:
            continue
        cap = limits.handlers.get(c.handler)
        if cap is not None and active.handlers[c.handler] >= cap:
            continue
        if c.concurrency_key is not None and active.keys[c.concurrency_key] >= (
            c.concurrency_limit or 1
        ):
            continue
        if admit is not None and not admit(c):
            continue
        chosen.append(c.run_id)
        active.add(c.queue, c.handler, c.concurrency_key, c.concurrency_limit)
    return chosen
