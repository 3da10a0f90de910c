"""The library API: ``rota.App``.

The core is async. The plain (sync) methods are thin doors into it: they run the same
coroutine on a private event loop thread (rota.engine.loop_stores), so there is one
implementation of each operation, usable from scripts, web views and notebooks alike.

``App`` holds the library's surface and little else: handlers live in a
:class:`~rota.handlers.Registry`, stores in :class:`~rota.engine.loop_stores.LoopStores`
(one per event loop), the use cases in rota.services.runs (runs, workers, limits) and
rota.services.schedules (jobs), and a working node is assembled by rota.engine.node.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

import structlog

from rota import logs
from rota.bootstrap import caller_connection_enqueue, caller_connection_publish
from rota.caller_connections import async_driver_connection, driver_connection
from rota.clock import Clock, SystemClock
from rota.config import Settings
from rota.context import RunContext
from rota.domain.breakers import Breaker, BreakerRow
from rota.domain.events import Event, Published, Subscription, WorkflowStarts
from rota.domain.jobs import Job
from rota.domain.limits import Limit
from rota.domain.rates import RateLimit
from rota.domain.retry import RetryPolicy
from rota.domain.runs import NewRun, Run
from rota.domain.workers import WorkerInfo
from rota.domain.workflow_runs import WorkflowRunView
from rota.domain.workflows import StoredWorkflow, WorkflowDefinition
from rota.engine import loops
from rota.engine.loop_stores import LoopStores
from rota.engine.node import Node, NodeRoles
from rota.engine.worker import DEFAULT_CONCURRENCY, Worker, WorkerOptions
from rota.engine.worker_http import WorkerHttp, serving
from rota.errors import InvalidArgument, UnsupportedFeature
from rota.handlers import HandlerFn, Registry, make_spec
from rota.services import bulk, events, schedules, workflow_schedules
from rota.services import cluster as cluster_service
from rota.services import controls as control_service
from rota.services import runs as run_service
from rota.services import workflows as workflow_service
from rota.services.runs import RunDetail, RunRequest
from rota.store.optional import CallerConnectionEnqueue, CallerConnectionPublish
from rota.store.port import LeaderInfo, Store
from rota.workflow import Workflow

log = structlog.get_logger("rota.app")


class App:
    """Handlers, how to reach the store, and the doors to enqueue and work.

    ``App("sqlite:///rota.db")`` or ``App("postgresql://user@host/db")``; with no URL,
    ``ROTA_DATABASE_URL`` or the SQLite default.
    """

    def __init__(
        self,
        database_url: str | None = None,
        *,
        settings: Settings | None = None,
        clock: Clock | None = None,
    ) -> None:
        settings = settings or Settings.from_env()
        if database_url is not None:
            settings = settings.with_overrides(database_url=database_url)
        self.settings = settings
        self.clock: Clock = clock or SystemClock()
        self.registry = Registry()
        # One store per event loop (a psycopg pool belongs to its loop), and the sync door.
        self._stores = LoopStores(lambda: self.settings)
        # Every App's workers can run a workflow schedule's runs (rota.services.workflow_schedules).
        self.registry.register(workflow_schedules.starter_spec(self._start_scheduled_workflow))

    # -- handlers -----------------------------------------------------------
    def handler(
        self,
        name: str | None = None,
        *,
        queue: str = "default",
        max_attempts: int = 3,
        timeout: float | None = None,
        retry: RetryPolicy | None = None,
        priority: int = 5,
        retry_timeouts: bool = True,
        tags: tuple[str, ...] | list[str] = (),
        concurrency_limit: int | None = None,
        singleton: bool = False,
        key_limit: int = 1,
        rate_limit: str | None = None,
        breaker: Breaker | None = None,
    ) -> Callable[[HandlerFn], HandlerFn]:
        """Register ``fn(ctx, payload)`` (async or plain) under ``name``.

        ``tags``: only workers with all of them run it. ``concurrency_limit``: at most
        this many of its runs run at once, cluster-wide (``singleton=True``: one).
        ``key_limit``: the default cap for runs enqueued with a ``concurrency_key``.
        ``rate_limit``: at most this many starts per period cluster-wide, e.g.
        ``"100/minute"`` (``/second``, ``/hour``), counted per ``rate_key``.
        ``breaker``: a cluster-wide :class:`rota.Breaker` (per ``breaker_key``)."""

        def register(fn: HandlerFn) -> HandlerFn:
            spec = make_spec(
                fn,
                name or str(getattr(fn, "__name__", "")),
                queue=queue,
                max_attempts=max_attempts,
                timeout=timeout,
                retry=retry,
                priority=priority,
                retry_timeouts=retry_timeouts,
                tags=tuple(tags),
                concurrency_limit=concurrency_limit,
                singleton=singleton,
                key_limit=key_limit,
                rate_limit=rate_limit,
                breaker=breaker,
            )
            self.registry.register(spec)
            return fn

        return register

    # -- stores, one per event loop -----------------------------------------
    async def store(self) -> Store:
        """The store for the running event loop, opened (and migrated) on first use."""
        return await self._stores.store()

    # -- enqueue ------------------------------------------------------------
    def enqueue(
        self,
        handler: str,
        payload: Any = None,
        *,
        run_at: datetime | None = None,
        priority: int | None = None,
        idempotency_key: str | None = None,
        queue: str | None = None,
        max_attempts: int | None = None,
        timeout: float | None = None,
        tags: tuple[str, ...] | list[str] | None = None,
        concurrency_key: str | None = None,
        key_limit: int | None = None,
        deadline: datetime | None = None,
        connection: Any = None,
        rate_key: str | None = None,
        breaker_key: str | None = None,
    ) -> int:
        """Create a run; returns its id. A repeated idempotency key returns the id of the
        run it created first. ``tags`` add to the handler's; runs sharing a
        ``concurrency_key`` run at most ``key_limit`` at once (default: the handler's,
        1); ``deadline``: if not started by then, the run is cancelled and never runs.
        ``connection`` (PostgreSQL): a psycopg connection (or a SQLAlchemy Connection or
        Session on psycopg) whose open transaction the run is created in, so it exists
        only if that commits. ``rate_key``: the handler's and queue's rate limits count
        runs of each key apart (e.g. per customer);
        ``breaker_key``: the handler's circuit breaker trips per key (e.g. per host)."""
        request = RunRequest(
            handler,
            payload,
            run_at,
            priority,
            idempotency_key,
            queue,
            max_attempts,
            timeout,
            tags,
            concurrency_key,
            key_limit,
            deadline,
            rate_key,
            breaker_key,
        )
        run = run_service.new_run(self.registry, request, self.clock.now())
        if connection is not None:
            return self._enqueue_on_connection(connection, run)
        return self._stores.call(lambda: self._enqueue_async([run]))[0]

    async def enqueue_async(self, handler: str, payload: Any = None, **options: Any) -> int:
        """The same as :meth:`enqueue`, from async code (``connection`` may be async)."""
        connection = options.pop("connection", None)
        run = run_service.new_run(
            self.registry, RunRequest(handler, payload, **options), self.clock.now()
        )
        if connection is not None:
            port = self._caller_enqueue()
            connection = await async_driver_connection(connection)
            [enqueued] = await port.enqueue_on(connection, [run], self.clock.db_now())
            return int(enqueued.run_id)
        return (await self._enqueue_async([run]))[0]

    def enqueue_many(self, requests: Iterable[RunRequest | Mapping[str, Any]]) -> list[int]:
        """Create many runs in one round trip (COPY on PostgreSQL). All are validated
        before any is written."""
        runs = bulk.new_runs(self.registry, requests, self.clock.now())
        return self._stores.call(lambda: self._enqueue_async(runs))

    async def enqueue_many_async(
        self, requests: Iterable[RunRequest | Mapping[str, Any]]
    ) -> list[int]:
        # The clock only refuses deadlines already passed: read once per batch.
        runs = bulk.new_runs(self.registry, requests, self.clock.now())
        return await self._enqueue_async(runs)

    async def _enqueue_async(self, runs: list[NewRun]) -> list[int]:
        return await run_service.enqueue(await self.store(), self.clock, runs)

    def _enqueue_on_connection(self, connection: Any, run: NewRun) -> int:
        port = self._caller_enqueue()
        connection = driver_connection(connection)
        return port.enqueue_on_sync(connection, run, self.clock.db_now())

    def _caller_enqueue(self) -> CallerConnectionEnqueue:
        port = caller_connection_enqueue(self.settings)
        if port is None:
            raise UnsupportedFeature("enqueue(connection=...) needs the PostgreSQL store")
        return port

    # -- reading and steering -----------------------------------------------
    def get_run(self, run_id: int) -> Run:
        return self._stores.use(run_service.get_run, run_id)

    def run_detail(self, run_id: int) -> RunDetail:
        return self._stores.use(run_service.run_detail, run_id)

    def list_runs(self, **filters: Any) -> list[Run]:
        return self._stores.use(run_service.list_runs, **filters)

    def cancel(self, run_id: int) -> Run:
        return self._stores.use(run_service.cancel, self.clock, run_id)

    def replay(self, run_id: int) -> int:
        """Re-run a finished run as a fresh run linked to it; returns the new id."""
        return self._stores.use(run_service.replay, self.clock, run_id)

    # -- workflows (rota.services.workflows) ------------------------------------------------
    def workflow(
        self,
        flow: Workflow | WorkflowDefinition,
        *,
        namespace: str = "default",
        cron: str | None = None,
        interval: float | timedelta | None = None,
        at: datetime | None = None,
        timezone: str = "UTC",
        misfire: str = "fire_now",
        overlap: str = "allow",
        payload: Any = None,
        **options: Any,
    ) -> StoredWorkflow:
        """Check a workflow definition (cycles, handlers, names, step options) and save
        it in the database as (namespace, name), so any process can start it by name.
        Saving it again replaces it (its version counts changes). Register its
        handlers first.

        ``cron=`` (in ``timezone``), ``interval=`` or ``at=`` (once) also start it on
        a schedule, with ``payload`` as each run's workflow payload: the leader's
        planner starts exactly one workflow run per slot (``misfire`` as for jobs;
        options ``queue``, ``priority``, ``jitter``, ``catch_up_window``,
        ``run_all_cap``, ``max_attempts`` of the starting run). None of them: manual
        (a schedule saved before is removed). The schedule is the job
        ``workflow:<name>``: pause, resume and list it like any job."""
        schedule = workflow_schedules.WorkflowSchedule(
            cron, interval, at, timezone, misfire, overlap, payload, options
        )
        return self._stores.call(
            lambda: self.workflow_async(flow, namespace=namespace, schedule=schedule)
        )

    async def workflow_async(
        self,
        flow: Workflow | WorkflowDefinition,
        *,
        namespace: str = "default",
        schedule: workflow_schedules.WorkflowSchedule | None = None,
    ) -> StoredWorkflow:
        definition = flow.definition() if isinstance(flow, Workflow) else flow
        store = await self.store()
        stored, _ = await workflow_schedules.save(
            store, self.clock, self.registry, definition, namespace, schedule
        )
        return stored

    async def _start_scheduled_workflow(self, ctx: RunContext, payload: Any) -> dict[str, int]:
        store = await self.store()
        return await workflow_schedules.start_from_run(
            store, self.clock, self.registry, ctx, payload
        )

    def get_workflow(self, name: str, namespace: str = "default") -> StoredWorkflow:
        """A saved workflow definition (WorkflowNotFound if there is none)."""
        return self._stores.use(workflow_service.get, namespace, name)

    def list_workflows(self, namespace: str | None = None) -> list[StoredWorkflow]:
        """The saved workflow definitions (in one namespace, if given)."""
        return self._stores.use(workflow_service.definitions, namespace)

    def start_workflow(self, name: str, payload: Any = None, *, namespace: str = "default") -> int:
        """Start a run of a saved workflow; returns the workflow run's id."""
        return self._stores.call(
            lambda: self.start_workflow_async(name, payload, namespace=namespace)
        )

    async def start_workflow_async(
        self, name: str, payload: Any = None, *, namespace: str = "default"
    ) -> int:
        store = await self.store()
        return await workflow_service.start(
            store, self.clock, self.registry, name, payload, namespace
        )

    def cancel_workflow(self, workflow_run_id: int) -> WorkflowRunView:
        """Cancel every unfinished step of a workflow run (running ones are asked to stop)."""
        return self._stores.use(workflow_service.cancel, self.clock, workflow_run_id)

    def workflow_run(self, workflow_run_id: int) -> WorkflowRunView:
        """A workflow run: its derived state, duration, steps and graph."""
        return self._stores.use(workflow_service.show, workflow_run_id)

    # -- events (rota.services.events) ---------------------------------------------------
    def publish(
        self,
        name: str,
        payload: Any = None,
        *,
        event_id: str | None = None,
        namespace: str = "default",
        connection: Any = None,
    ) -> Published:
        """Publish an event: every job subscribed to ``name`` whose filter matches gets
        one run, in the same transaction. The same ``event_id`` again (in the namespace,
        for the name) creates nothing. ``connection`` (PostgreSQL): a psycopg connection
        (or a SQLAlchemy Connection or Session on psycopg) whose open transaction the
        event and its runs are written in."""
        event = events.new_event(name, payload, event_id, namespace)
        starts = self.workflow_starts()
        if connection is not None:
            port = self._caller_publish()
            # Checked before the caller's transaction writes the event (issue 31).
            starts = self._stores.use(events.checked_starts, event, starts)
            connection = driver_connection(connection)
            return port.publish_on_sync(connection, event, self.clock.db_now(), starts)
        return self._stores.use(events.publish, self.clock, event, starts)

    async def publish_async(
        self,
        name: str,
        payload: Any = None,
        *,
        event_id: str | None = None,
        namespace: str = "default",
        connection: Any = None,
    ) -> Published:
        """The same as :meth:`publish`, from async code (``connection`` may be async)."""
        event = events.new_event(name, payload, event_id, namespace)
        starts = self.workflow_starts()
        if connection is not None:
            port = self._caller_publish()
            starts = await events.checked_starts(await self.store(), event, starts)
            connection = await async_driver_connection(connection)
            return await port.publish_on(connection, event, self.clock.db_now(), starts)
        return await events.publish(await self.store(), self.clock, event, starts)

    def workflow_starts(self) -> WorkflowStarts:
        """The step runs of a saved workflow, from this App's handlers
        (rota.services.workflows.starting)."""
        return workflow_service.starting(self.registry)

    def _caller_publish(self) -> CallerConnectionPublish:
        port = caller_connection_publish(self.settings)
        if port is None:
            raise UnsupportedFeature("publish(connection=...) needs the PostgreSQL store")
        return port

    def subscribe(
        self,
        event_name: str,
        *,
        job: str | None = None,
        workflow: str | None = None,
        where: dict[str, Any] | None = None,
        namespace: str = "default",
    ) -> Subscription:
        """Make the job ``job`` run (or the saved workflow ``workflow`` start) once
        per published ``event_name`` whose payload matches ``where`` (payload paths to
        values, e.g. ``{"customer.tier": "gold"}``; see rota.domain.events).
        Subscribing again replaces ``where``."""
        return self._stores.use(
            events.subscribe,
            self.clock,
            event_name,
            job=job,
            workflow=workflow,
            event_filter=where,
            namespace=namespace,
        )

    def unsubscribe(
        self,
        event_name: str,
        *,
        job: str | None = None,
        workflow: str | None = None,
        namespace: str = "default",
    ) -> bool:
        return self._stores.use(
            events.unsubscribe, event_name, job=job, workflow=workflow, namespace=namespace
        )

    def list_events(self, **filters: Any) -> list[Event]:
        """Published events, newest first (``name=``, ``namespace=``, ``before_id=``,
        ``limit=``)."""
        return self._stores.use(events.list_events, **filters)

    # -- jobs and schedules -------------------------------------------------
    def schedule(
        self,
        name: str,
        *,
        handler: str,
        payload: Any = None,
        cron: str | None = None,
        interval: float | timedelta | None = None,
        at: datetime | None = None,
        timezone: str = "UTC",
        misfire: str = "fire_now",
        overlap: str = "allow",
        **options: Any,
    ) -> Job:
        """Create or replace the job ``name``: ``cron=`` (5 or 6 fields, seconds first),
        ``interval=`` (seconds or a timedelta) or ``at=`` (once); none of them for a
        manual job. Options: ``jitter``, ``catch_up_window``, ``run_all_cap``,
        ``queue``, ``priority``, ``max_attempts``, ``timeout``, ``namespace``, and
        ``parameters`` (a template's JSON Schema of the payload, with defaults: the
        payload and each trigger's must fit it)."""
        spec = schedules.job_spec(
            self.registry,
            name,
            handler,
            payload,
            cron=cron,
            interval=interval,
            at=at,
            timezone=timezone,
            misfire=misfire,
            overlap=overlap,
            **options,
        )
        return self._stores.use(schedules.save_job, self.clock, spec)

    def update_schedule(self, name: str, namespace: str = "default", **changes: Any) -> Job:
        """Change some fields of a job's spec (e.g. ``cron=``; ``paused`` is separate):
        the same merge as the API's ``PATCH /jobs/{name}`` (see
        :func:`rota.services.schedules.merge_job_changes`)."""
        return self._stores.use(schedules.update_job, self.clock, namespace, name, **changes)

    def pause_schedule(self, name: str, namespace: str = "default") -> Job:
        return self._stores.use(schedules.set_paused, self.clock, namespace, name, True)

    def resume_schedule(self, name: str, namespace: str = "default") -> Job:
        """Resume planning from now; slots that fell in the pause are skipped."""
        return self._stores.use(schedules.set_paused, self.clock, namespace, name, False)

    def delete_schedule(self, name: str, namespace: str = "default") -> None:
        self._stores.use(schedules.delete_job, namespace, name)

    def get_schedule(self, name: str, namespace: str = "default") -> Job:
        return self._stores.use(schedules.get_job, namespace, name)

    def list_schedules(self, namespace: str | None = None) -> list[Job]:
        return self._stores.use(schedules.list_jobs, namespace)

    def trigger(
        self,
        name: str,
        payload: Any = None,
        *,
        idempotency_key: str | None = None,
        namespace: str = "default",
    ) -> int:
        """Run a job now (optionally with another payload); returns the run id."""
        return self._stores.use(
            schedules.trigger_job, self.clock, namespace, name, payload, idempotency_key
        )

    # -- limits and workers -------------------------------------------------
    def set_limit(self, scope: str, name: str, max_running: int) -> Limit:
        """A cluster-wide cap on running runs: scope ``"global"`` (name ``"*"``),
        ``"queue"`` or ``"handler"``."""
        return self._stores.use(control_service.set_limit, scope, name, max_running)

    def clear_limit(self, scope: str, name: str) -> None:
        self._stores.use(control_service.clear_limit, scope, name)

    def list_limits(self) -> list[Limit]:
        return self._stores.use(control_service.list_limits)

    def set_rate(self, scope: str, name: str, rate: str) -> RateLimit:
        """A cluster-wide cap on starts, e.g. ``"100/minute"``, of a ``"queue"`` or
        ``"handler"`` (per rate_key); replaces a handler's declared rate until a worker
        starts with the declaration again."""
        return self._stores.use(control_service.set_rate, scope, name, rate)

    def clear_rate(self, scope: str, name: str) -> None:
        self._stores.use(control_service.clear_rate, scope, name)

    def list_rates(self) -> list[RateLimit]:
        return self._stores.use(control_service.list_rates)

    def list_breakers(self) -> list[BreakerRow]:
        """Every circuit breaker that has seen an outcome: state, streak, cause and the
        current failure-rate window's outcomes."""
        return self._stores.use(control_service.list_breakers, self.clock)

    def reset_breaker(self, handler: str, key: str = "") -> BreakerRow:
        """Close a breaker now (recorded as a transition with that cause)."""
        return self._stores.use(control_service.reset_breaker, self.clock, handler, key)

    def list_workers(self) -> list[WorkerInfo]:
        return self._stores.use(cluster_service.list_workers)

    def drain_worker(self, node_id: str) -> None:
        """The worker stops claiming and finishes what it holds."""
        self._stores.use(cluster_service.drain_worker, self.clock, node_id)

    def resume_worker(self, node_id: str) -> None:
        self._stores.use(cluster_service.resume_worker, self.clock, node_id)

    def leader(self) -> LeaderInfo | None:
        """Who leads the cluster now (holder, term, since when, until when)."""
        return self._stores.use(cluster_service.leader)

    # -- working ------------------------------------------------------------
    def run_worker(
        self,
        concurrency: int = DEFAULT_CONCURRENCY,
        node_id: str | None = None,
        queues: Iterable[str] | None = None,
        tags: Iterable[str] = (),
        http: WorkerHttp | None = None,
        loop: str = "auto",
    ) -> None:
        """Work until SIGTERM or SIGINT, then shut down gracefully. Blocking. ``http``:
        serve /metrics and health probes beside the worker (``rota worker --http``).
        ``loop``: auto (uvloop when installed), uvloop or asyncio (rota.engine.loops)."""
        options = self.worker_options(concurrency, node_id, queues, tags)

        async def main() -> None:
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(signum, stop.set)
            try:
                async with serving(http, await self.store(), options.node_id):
                    await self.work(stop, options)
            finally:
                await self.aclose()

        with logs.default_setup():
            loops.run(main(), loop)

    def worker_options(
        self,
        concurrency: int = DEFAULT_CONCURRENCY,
        node_id: str | None = None,
        queues: Iterable[str] | None = None,
        tags: Iterable[str] = (),
    ) -> WorkerOptions:
        for name, value in (("queues", queues), ("tags", tags)):
            if isinstance(value, str):
                raise InvalidArgument(name, value, f"a list of {name[:-1]} names")
        kwargs: dict[str, Any] = {
            "concurrency": concurrency,
            "queues": tuple(queues or ()),
            "tags": tuple(tags),
        }
        if node_id is not None:
            kwargs["node_id"] = node_id
        return WorkerOptions(**kwargs)

    async def work(self, stop: asyncio.Event, options: WorkerOptions | None = None) -> Worker:
        """Run a worker node on the current event loop until ``stop`` is set: the worker,
        and (unless ``options.leader`` is False) a leader candidate beside it."""
        node = await self.node(NodeRoles.working(options or WorkerOptions()))
        await node.run(stop)
        assert node.worker is not None  # a working node always has one
        return node.worker

    async def node(self, roles: NodeRoles) -> Node:
        """A node with ``roles`` (rota.engine.node) on this App's handlers, settings, clock and
        the running loop's store; ``await node.run(stop)`` runs it."""
        return Node(await self.store(), self.registry, self.settings, self.clock, roles)

    # -- closing ------------------------------------------------------------
    async def aclose(self) -> None:
        """Close the store of the running loop."""
        await self._stores.aclose()

    def close(self) -> None:
        """Close every store this App opened, and its sync loop thread. An App never
        closed is closed at interpreter exit; closing it sooner frees its connections."""
        self._stores.close()

    def __enter__(self) -> App:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    async def __aenter__(self) -> App:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()
        # Sync calls made inside the block opened a store on the private loop; closing
        # it blocks on that loop's thread, so not on this one.
        await asyncio.to_thread(self.close)
