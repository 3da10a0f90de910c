"""What a worker is told: its node id, how many runs at once, its queues and tags."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field

from rota.domain.runs import check_name, check_positive_int
from rota.errors import InvalidArgument

# Runs at once per worker when nothing says otherwise (ADR 0019): handlers are async and
# mostly wait on I/O, so a worker is bound by its event loop's CPU, not by slots. At 100
# a claim fills a whole batch (MAX_CLAIM_BATCH) as slots free up, and the no-op drain is
# within a few percent of the best any setting reached (docs/benchmarks.md). Sync
# handlers run in threads; only as many are started as run at once.
DEFAULT_CONCURRENCY = 100


def default_node_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


@dataclass(frozen=True)
class WorkerOptions:
    node_id: str = field(default_factory=default_node_id)
    concurrency: int = DEFAULT_CONCURRENCY
    queues: tuple[str, ...] = ()  # empty: the queues of the registered handlers
    tags: tuple[str, ...] = ()  # capabilities: runs needing a subset of these may be claimed
    # Whether the node this worker runs in stands for leader (rota.engine.node); the leader
    # plans schedules, reaps expired leases and prunes.
    leader: bool = True

    def __post_init__(self) -> None:
        check_name("node_id", self.node_id)
        check_positive_int("concurrency", self.concurrency)
        if isinstance(self.queues, str):
            raise InvalidArgument("queues", self.queues, "a list of queue names")
        for queue in self.queues:
            check_name("queue", queue)
        if isinstance(self.tags, str):
            raise InvalidArgument("tags", self.tags, "a list of tag names")
        for tag in self.tags:
            check_name("tag", tag)
