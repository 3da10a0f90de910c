"""Everything the dashboard reads, in one place, through the same use cases and store
port methods as the HTTP API (no SQL here), and always narrowed to what the viewer's
namespaces allow. When the API's reads move behind new use cases, this module is the
one to point at them."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Hashable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from rota.clock import Clock
from rota.dashboard.shared import Shared
from rota.domain.access import Principal
from rota.domain.jobs import Job, RecentStart
from rota.domain.limits import Limit
from rota.domain.queues import QueueSummary
from rota.domain.runs import LogLine, Run
from rota.domain.search import RunSearch
from rota.domain.states import RunState
from rota.domain.stats import FinishedCount, QueueCount
from rota.domain.triggers import fire_times
from rota.domain.workers import WorkerInfo
from rota.domain.workflow_runs import WorkflowRunView
from rota.errors import JobNotFound
from rota.services import cluster as cluster_service
from rota.services import queues as queue_service
from rota.services import runs as run_service
from rota.services import schedules
from rota.services import workflows as workflow_service
from rota.store.port import LeaderInfo, LeaderTerm, Store

WINDOW = timedelta(hours=1)
LIVE_FRESH_SECONDS = 0.5  # the change feed's interval: pages see what the feed saw
HOUR_FRESH_SECONDS = 5.0  # the hour's chart moves in 5-minute bars
# How much older a shared count may be and still be shown while a new one is read behind
# the request (dashboard/shared.py): an open page's feed corrects it within 0.5 s.
LIVE_STALE_FOR_SECONDS = 5.0
HOUR_STALE_FOR_SECONDS = 25.0
BUCKET_SECONDS = 300  # twelve bars in the overview's hour
FAILED_STATES = frozenset(
    {RunState.FAILED, RunState.TIMED_OUT, RunState.DEAD_LETTERED, RunState.CANCELLED}
)
LIVE_STATES = (RunState.PENDING, RunState.RETRYING, RunState.CLAIMED, RunState.RUNNING)
PICKUP_SAMPLE = 200  # newest runs whose pickup delay the overview summarises
NEXT_FIRES = 10
JOB_RUNS = 20
LEADER_TERMS = 50


# -- overview ------------------------------------------------------------------------
@dataclass(frozen=True)
class QueueRow:
    namespace: str
    queue: str
    counts: dict[RunState, int]
    oldest_due_at: datetime | None


@dataclass(frozen=True)
class Bucket:
    start: datetime
    succeeded: int
    failed: int


@dataclass(frozen=True)
class Overview:
    now: datetime
    queues: list[QueueRow]
    buckets: list[Bucket]
    finished: int
    failure_rate: float | None  # of the runs finished in the window; None: none finished
    pickup_p50: float | None
    pickup_p99: float | None
    pickup_sample: int
    dead_letters: int
    workers: dict[str, int]
    leader: LeaderInfo | None
    paused_queues: tuple[str, ...] = ()


class ClusterCounts:
    """The cluster-wide counts, read for every namespace and shared by every request of
    the process (then narrowed per viewer): the live counts at most every
    LIVE_FRESH_SECONDS (the change feed reads them too), the hour's finished counts at
    most every HOUR_FRESH_SECONDS. Both are aggregates over every live run and over the
    hour's finished runs, the dearest reads the dashboard makes on a big table, so a
    page is given the last reading (up to the STALE_FOR seconds older) while a new one
    is made behind it."""

    def __init__(self, store_of: Callable[[], Awaitable[Store]], clock: Clock) -> None:
        async def live() -> list[QueueCount]:
            return await (await store_of()).live_queue_counts(clock.db_now())

        async def hour() -> list[FinishedCount]:
            store = await store_of()
            since = await store.now(clock.db_now()) - WINDOW
            return await store.finished_counts(since, BUCKET_SECONDS)

        async def recent() -> list[FinishedCount]:
            store = await store_of()
            since = queue_service.recent_since(await store.now(clock.db_now()))
            return await store.finished_counts(since, queue_service.MINUTE_BUCKETS)

        self.live = Shared(live, LIVE_FRESH_SECONDS, clock.monotonic, LIVE_STALE_FOR_SECONDS)
        self.hour = Shared(hour, HOUR_FRESH_SECONDS, clock.monotonic, HOUR_STALE_FOR_SECONDS)
        # The queues page's window (minutes: the leader's rollups answer it).
        self.recent = Shared(recent, HOUR_FRESH_SECONDS, clock.monotonic, HOUR_STALE_FOR_SECONDS)


async def overview(
    store: Store, clock: Clock, principal: Principal, counts: ClusterCounts
) -> Overview:
    now = await store.now(clock.db_now())
    live = [c for c in await counts.live.get() if principal.can_see(c.namespace)]
    since = now - WINDOW
    finished = [c for c in await counts.hour.get() if principal.can_see(c.namespace)]
    buckets = _buckets(finished, since, now)
    total = sum(b.succeeded + b.failed for b in buckets)
    failed = sum(b.failed for b in buckets)
    p50, p99, sample = await _pickup_delays(store, principal, since)
    workers = Counter(w.state.value for w in await store.list_workers())
    return Overview(
        now=now,
        queues=_queue_rows(live),
        buckets=buckets,
        finished=total,
        failure_rate=(failed / total) if total else None,
        pickup_p50=p50,
        pickup_p99=p99,
        pickup_sample=sample,
        dead_letters=sum(c.count for c in live if c.state is RunState.DEAD_LETTERED),
        workers=dict(sorted(workers.items())),
        leader=await store.leader(),
        paused_queues=tuple(sorted(await queue_service.paused_queues(store))),
    )


def _queue_rows(live: Iterable[QueueCount]) -> list[QueueRow]:
    counts: dict[tuple[str, str], dict[RunState, int]] = defaultdict(dict)
    oldest: dict[tuple[str, str], datetime] = {}
    for count in live:
        key = (count.namespace, count.queue)
        counts[key][count.state] = counts[key].get(count.state, 0) + count.count
        if count.oldest_due_at is not None:
            seen = oldest.get(key)
            oldest[key] = min(seen, count.oldest_due_at) if seen else count.oldest_due_at
    return [QueueRow(*key, counts[key], oldest.get(key)) for key in sorted(counts)]


def _buckets(finished: Iterable[FinishedCount], since: datetime, now: datetime) -> list[Bucket]:
    first = int(since.timestamp()) // BUCKET_SECONDS * BUCKET_SECONDS
    starts = range(first, int(now.timestamp()) + 1, BUCKET_SECONDS)
    ok: Counter[int] = Counter()
    bad: Counter[int] = Counter()
    for count in finished:
        start = int(count.bucket_start.timestamp())
        (bad if count.state in FAILED_STATES else ok)[start] += count.count
    return [Bucket(datetime.fromtimestamp(s, tz=now.tzinfo), ok[s], bad[s]) for s in starts]


async def _pickup_delays(
    store: Store, principal: Principal, since: datetime
) -> tuple[float | None, float | None, int]:
    """p50 and p99 of (started - due) over the newest runs that started in the window:
    a sample read with the runs search, not a scan of the table."""
    runs = await store.search_runs(
        RunSearch(
            namespaces=principal.reach(None),
            created_after=since - WINDOW,
            limit=PICKUP_SAMPLE,
        )
    )
    delays = sorted(
        max(0.0, (run.started_at - run.run_at).total_seconds())
        for run in runs
        if run.started_at is not None and run.started_at >= since
    )
    if not delays:
        return None, None, 0
    return _percentile(delays, 0.5), _percentile(delays, 0.99), len(delays)


def _percentile(ordered: list[float], fraction: float) -> float:
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


# -- queues --------------------------------------------------------------------------
async def queues(
    store: Store, clock: Clock, principal: Principal, counts: ClusterCounts
) -> list[QueueSummary]:
    """Every queue, from the counts every request of the process shares (narrowed to
    the viewer's namespaces); names, workers, pauses and caps are the cluster's."""
    now = await store.now(clock.db_now())
    live, recent = await counts.live.get(), await counts.recent.get()
    return await queue_service.summaries(store, now, live, recent, principal.namespaces)


# -- runs ----------------------------------------------------------------------------
async def search_runs(store: Store, search: RunSearch, job: tuple[str, str] | None) -> list[Run]:
    return await run_service.search_runs(store, search, job)


async def run_detail(
    store: Store, principal: Principal, run_id: int
) -> tuple[run_service.RunDetail, Job | None]:
    """The run with its attempts and logs, and the job that made it (if any)."""
    detail = await run_service.run_detail(store, run_id, principal.namespaces)
    job_id = detail.run.job_id
    return detail, (await store.get_job_by_id(job_id) if job_id is not None else None)


async def run_logs_after(
    store: Store, principal: Principal, run_id: int, after: int
) -> tuple[Run, list[LogLine]]:
    """The run (read first: lines written before it ended are in what follows) and its
    log lines after seq ``after``."""
    run = await run_service.get_run(store, run_id, principal.namespaces)
    return run, await store.logs(run_id, after)


# -- workflow runs --------------------------------------------------------------------
WORKFLOW_RUNS_SHOWN = 50


async def workflow_runs(store: Store, principal: Principal) -> list[WorkflowRunView]:
    """The newest workflow runs the viewer can see, with their derived state (one read
    of each: the list is short), as the API lists them."""
    rows = await workflow_service.recent(
        store, None, WORKFLOW_RUNS_SHOWN, None, principal.namespaces
    )
    return [await workflow_service.show(store, int(row["id"])) for row in rows]


async def workflow_run(store: Store, principal: Principal, workflow_run_id: int) -> WorkflowRunView:
    return await workflow_service.show(store, workflow_run_id, principal.namespaces)


# -- jobs ----------------------------------------------------------------------------
async def list_jobs(store: Store, principal: Principal) -> list[Job]:
    return [job for job in await store.list_jobs() if principal.can_see(job.spec.namespace)]


async def recent_starts(store: Store, jobs: list[Job]) -> dict[int, list[RecentStart]]:
    """What became of each listed job's newest slots, and how late each started."""
    return await schedules.recent_starts(store, jobs)


@dataclass(frozen=True)
class JobDetail:
    job: Job
    next_fires: list[datetime]
    runs: list[Run] = field(default_factory=list)
    recent_starts: list[RecentStart] = field(default_factory=list)


async def job_detail(
    store: Store, clock: Clock, principal: Principal, namespace: str, name: str
) -> JobDetail:
    """The job, its next fire instants (none while paused) and its newest runs;
    JobNotFound for a job the viewer cannot see, as for a missing one."""
    if not principal.can_see(namespace):
        raise JobNotFound(namespace, name)
    job = await schedules.get_job(store, namespace, name)
    now = await store.now(clock.db_now())
    return JobDetail(
        job=job,
        next_fires=next_fires(job, now),
        runs=await store.search_runs(
            RunSearch(namespaces=(namespace,), job_id=job.id, limit=JOB_RUNS)
        ),
        recent_starts=(await schedules.recent_starts(store, [job]))[job.id],
    )


def next_fires(job: Job, now: datetime) -> list[datetime]:
    trigger = job.trigger
    if job.paused or trigger is None:
        return []
    start = max(now, job.cursor)
    return fire_times(trigger, start, datetime.max.replace(tzinfo=now.tzinfo), NEXT_FIRES)


# -- cluster -------------------------------------------------------------------------
@dataclass(frozen=True)
class WorkerRow:
    worker: WorkerInfo
    heartbeat_age: float | None
    running: list[Run]


async def workers(
    store: Store, clock: Clock, principal: Principal, counts: ClusterCounts
) -> list[WorkerRow]:
    """Every worker (the cluster is everyone's to see, as in the API) with the runs it
    holds that the viewer may see. The held runs are searched only when the live counts
    say some are held: a search for none scans far on a big table."""
    now = await store.now(clock.db_now())
    holding = any(
        c.state.is_active and c.count and principal.can_see(c.namespace)
        for c in await counts.live.get()
    )
    held = (
        await store.search_runs(
            RunSearch(
                namespaces=principal.reach(None),
                states=(RunState.CLAIMED, RunState.RUNNING),
                limit=run_service.MAX_PAGE,
            )
        )
        if holding
        else []
    )
    by_worker: dict[str, list[Run]] = defaultdict(list)
    for run in held:
        if run.worker_id is not None:
            by_worker[run.worker_id].append(run)
    return [
        WorkerRow(w, w.heartbeat_age(now), by_worker.get(w.node_id, []))
        for w in await cluster_service.list_workers(store)
    ]


async def limits(store: Store) -> list[Limit]:
    return await store.list_limits()


async def leader(store: Store) -> tuple[LeaderInfo | None, list[LeaderTerm]]:
    """Who leads now, and the newest terms (when leadership changed hands)."""
    return await store.leader(), await store.leader_history(LEADER_TERMS)


# -- the change feed -----------------------------------------------------------------
async def change_signature(store: Store, clock: Clock, counts: ClusterCounts) -> Hashable:
    """A value that changes whenever a run is enqueued, starts, fails or finishes: the
    live counts (index-only) and the counts of runs finished in the last two minutes.
    Two queries, made once per interval by the one change feed of the process (the live
    counts it reads are the ones the pages then show)."""
    live = await counts.live.get(fresh=0.0)
    now = clock.now()
    since = now - timedelta(seconds=now.timestamp() % 60 + 60)
    done = await store.finished_counts(since, 60)
    return (
        tuple(sorted((c.namespace, c.queue, c.state.value, c.count) for c in live)),
        tuple(
            sorted(
                (c.bucket_start.isoformat(), c.namespace, c.queue, c.state.value, c.count)
                for c in done
            )
        ),
    )
