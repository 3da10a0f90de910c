"""Queues as a thing an operator acts on (issue 29, ADR 0035): each queue's depth by
state, oldest due age, recent throughput and failure rate, and the workers serving it;
pausing and resuming a queue cluster-wide, and setting its concurrency limit live.

Nothing here scans history: depth comes from the live counts (indexes only), the recent
window from the finished-run counts (the leader's per-minute rollups), the workers from
the registry. A queue's concurrency limit is its cap in ``rota_limits`` (scope queue),
the one every limited claim already reads."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from datetime import datetime

from rota.clock import Clock
from rota.domain.limits import Limit, LimitScope
from rota.domain.queues import RECENT_WINDOW, QueueControl, QueueSummary, check_queue_name
from rota.domain.queues import summarize as summarize_queues
from rota.domain.stats import FinishedCount, QueueCount, minute_floor
from rota.errors import InvalidArgument
from rota.store.port import Store

Namespaces = Collection[str] | None  # None: every namespace
MINUTE_BUCKETS = 60  # whole minutes: the leader's rollups answer them


async def list_queues(
    store: Store, clock: Clock, namespaces: Namespaces = None
) -> list[QueueSummary]:
    """Every queue with runs, recent finished runs, a worker, a pause or a cap. Counts are
    those of ``namespaces`` (None: all); names, workers and pauses are the cluster's."""
    now = await store.now(clock.db_now())
    since = recent_since(now)
    live = await store.live_queue_counts(now)
    finished = await store.finished_counts(since, MINUTE_BUCKETS)
    return await summaries(store, now, live, finished, namespaces)


def recent_since(now: datetime) -> datetime:
    """Where the recent window starts: whole minutes, so the rollups answer it."""
    return minute_floor(now - RECENT_WINDOW)


async def summaries(
    store: Store,
    now: datetime,
    live: Iterable[QueueCount],
    finished: Iterable[FinishedCount],
    namespaces: Namespaces = None,
) -> list[QueueSummary]:
    """The queues from counts already read (the dashboard shares its reads between
    requests): ``finished`` by minute since :func:`recent_since`."""
    since = recent_since(now)

    def seen(namespace: str) -> bool:
        return namespaces is None or namespace in namespaces

    return summarize_queues(
        now,
        [c for c in live if seen(c.namespace)],
        [c for c in finished if seen(c.namespace) and c.bucket_start >= since],
        await store.list_workers(),
        await store.list_queues(),
        await store.list_limits(),
        window=now - since,
    )


async def get_queue(
    store: Store, clock: Clock, name: str, namespaces: Namespaces = None
) -> QueueSummary:
    """One queue's summary (an unknown queue is an empty one: queues are names)."""
    check_queue_name(name)
    for summary in await list_queues(store, clock, namespaces):
        if summary.name == name:
            return summary
    now = await store.now(clock.db_now())
    [empty] = summarize_queues(now, [], [], [], [QueueControl(name, paused=False)], [])
    return empty


async def pause_queue(store: Store, clock: Clock, name: str, by: str | None) -> QueueControl:
    """Claims skip the queue everywhere within about a second; runs held finish."""
    return await store.set_queue_paused(check_queue_name(name), True, by, clock.db_now())


async def resume_queue(store: Store, clock: Clock, name: str) -> QueueControl:
    return await store.set_queue_paused(check_queue_name(name), False, None, clock.db_now())


async def paused_queues(store: Store) -> frozenset[str]:
    return frozenset(c.name for c in await store.list_queues() if c.paused)


async def set_queue_limit(store: Store, name: str, max_running: int | None) -> int | None:
    """At most ``max_running`` runs of the queue at once, cluster-wide, from the next
    claims on (None: no cap). Returns the cap in force."""
    check_queue_name(name)
    if max_running is None:
        await store.clear_limit(LimitScope.QUEUE.value, name)
        return None
    if isinstance(max_running, bool) or not isinstance(max_running, int) or max_running < 1:
        raise InvalidArgument(
            "concurrency limit", max_running, "a whole number >= 1, or none to remove the cap"
        )
    limit = Limit(LimitScope.QUEUE, name, max_running)
    await store.set_limit(limit)
    return limit.max_running
