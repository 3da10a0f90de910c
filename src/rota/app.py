"""The library API: ``rota.App``.

The core is async. The plain (sync) methods are thin doors into it: they run the same
coroutine on a private event loop thread, so there is one implementation of each
operation, usable from scripts, web views and notebooks alike.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from concurrent.futures import Future
from datetime import datetime, timedelta
from typing import Any, TypeVar

import structlog

from rota import schedules, services
from rota.bootstrap import open_store
from rota.clock import Clock, SystemClock
from rota.config import Settings
from rota.domain.jobs import Job
from rota.domain.limits import Limit
from rota.domain.retry import RetryPolicy
from rota.domain.runs import NewRun, Run
from rota.domain.workers import WorkerInfo
from rota.errors import InvalidArgument, UnsupportedFeature
from rota.handlers import HandlerFn, Registry, make_spec
from rota.services import RunDetail, RunRequest
from rota.store.port import LeaderInfo, Store
from rota.worker import Worker, WorkerOptions
from rota.worker_http import WorkerHttp, serving

T = TypeVar("T")
log = structlog.get_logger("rota.app")


class _LoopThread:
    """An event loop on a daemon thread, for the sync doors into the async core."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="rota-sync", daemon=True)
        self._thread.start()

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        future: Future[T] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return future.result()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)
        if not self._thread.is_alive():
            self.loop.close()


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
        # One store per event loop (a psycopg pool belongs to its loop), opened once even
        # when many coroutines ask at the same time (an API server's first requests).
        self._stores: dict[asyncio.AbstractEventLoop, asyncio.Task[Store]] = {}
        self._store_lock = threading.Lock()
        self._sync: _LoopThread | None = None

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
    ) -> Callable[[HandlerFn], HandlerFn]:
        """Register ``fn(ctx, payload)`` (async or plain) under ``name``.

        ``tags``: only workers with all of them run it. ``concurrency_limit``: at most
        this many of its runs run at once, cluster-wide (``singleton=True``: one).
        ``key_limit``: the default cap for runs enqueued with a ``concurrency_key``."""

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
            )
            self.registry.register(spec)
            return fn

        return register

    # -- stores, one per event loop -----------------------------------------
    async def store(self) -> Store:
        """The store for the running event loop, opened (and migrated) on first use."""
        loop = asyncio.get_running_loop()
        with self._store_lock:
            opening = self._stores.get(loop)
            if opening is None:
                opening = loop.create_task(open_store(self.settings), name="rota-open-store")
                # Its error reaches every caller; should they all be gone (cancelled),
                # it is still retrieved, never reported as "never retrieved".
                opening.add_done_callback(_retrieve_quietly)
                self._stores[loop] = opening
        try:
            return await asyncio.shield(opening)
        except BaseException:
            if opening.done():  # it failed to open: the next caller tries afresh
                with self._store_lock:
                    if self._stores.get(loop) is opening:
                        del self._stores[loop]
            raise

    def _call(self, make: Callable[[], Awaitable[T]]) -> T:
        with self._store_lock:
            if self._sync is None:
                self._sync = _LoopThread()
            door = self._sync

        async def run() -> T:
            return await make()

        return door.call(run())

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
    ) -> int:
        """Create a run; returns its id. A repeated idempotency key returns the id of the
        run it created first. ``tags`` add to the handler's; runs sharing a
        ``concurrency_key`` run at most ``key_limit`` at once (default: the handler's,
        1); ``deadline``: if not started by then, the run is cancelled and never runs.
        ``connection`` (PostgreSQL): a psycopg connection whose open transaction the run
        is created in, so it exists only if that commits."""
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
        )
        run = services.new_run(self.registry, request, self.clock.now())
        if connection is not None:
            return self._enqueue_on_connection(connection, run)
        return self._call(lambda: self._enqueue_async([run]))[0]

    async def enqueue_async(self, handler: str, payload: Any = None, **options: Any) -> int:
        """The same as :meth:`enqueue`, from async code (``connection`` may be async)."""
        connection = options.pop("connection", None)
        run = services.new_run(
            self.registry, RunRequest(handler, payload, **options), self.clock.now()
        )
        if connection is not None:
            store = await self.store()
            enqueue_on = getattr(store, "enqueue_on", None)
            if enqueue_on is None:
                raise UnsupportedFeature("enqueue(connection=...) needs the PostgreSQL store")
            [enqueued] = await enqueue_on(connection, [run], self.clock.db_now())
            return int(enqueued.run_id)
        return (await self._enqueue_async([run]))[0]

    def enqueue_many(self, jobs: Iterable[RunRequest | Mapping[str, Any]]) -> list[int]:
        """Create many runs in one round trip (COPY on PostgreSQL). All are validated
        before any is written."""
        runs = [
            services.new_run(self.registry, RunRequest.coerce(job), self.clock.now())
            for job in jobs
        ]
        return self._call(lambda: self._enqueue_async(runs))

    async def enqueue_many_async(self, jobs: Iterable[RunRequest | Mapping[str, Any]]) -> list[int]:
        runs = [
            services.new_run(self.registry, RunRequest.coerce(job), self.clock.now())
            for job in jobs
        ]
        return await self._enqueue_async(runs)

    async def _enqueue_async(self, runs: list[NewRun]) -> list[int]:
        return await services.enqueue(await self.store(), self.clock, runs)

    def _enqueue_on_connection(self, connection: Any, run: NewRun) -> int:
        if not self.settings.database_url.startswith(("postgresql://", "postgres://")):
            raise UnsupportedFeature("enqueue(connection=...) needs the PostgreSQL store")
        from rota.store.postgres import enqueue_on_sync_connection

        return enqueue_on_sync_connection(
            connection, run, self.clock.db_now(), self.settings.aging_seconds
        )

    # -- reading and steering -----------------------------------------------
    def get_run(self, run_id: int) -> Run:
        return self._call(lambda: self._with_store(services.get_run, run_id))

    def run_detail(self, run_id: int) -> RunDetail:
        return self._call(lambda: self._with_store(services.run_detail, run_id))

    def list_runs(self, **filters: Any) -> list[Run]:
        return self._call(lambda: self._with_store(services.list_runs, **filters))

    def cancel(self, run_id: int) -> Run:
        return self._call(lambda: self._with_store(services.cancel, self.clock, run_id))

    def replay(self, run_id: int) -> int:
        """Re-run a finished run as a fresh run linked to it; returns the new id."""
        return self._call(lambda: self._with_store(services.replay, self.clock, run_id))

    async def _with_store(self, fn: Callable[..., Awaitable[T]], *args: Any, **kw: Any) -> T:
        return await fn(await self.store(), *args, **kw)

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
        ``queue``, ``priority``, ``max_attempts``, ``timeout``, ``namespace``."""
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
        return self._call(lambda: self._with_store(schedules.save_job, self.clock, spec))

    def update_schedule(self, name: str, namespace: str = "default", **changes: Any) -> Job:
        """Change some fields of a job's spec (e.g. ``cron=``, ``paused`` is separate)."""
        return self._call(
            lambda: self._with_store(schedules.update_job, self.clock, namespace, name, **changes)
        )

    def pause_schedule(self, name: str, namespace: str = "default") -> Job:
        return self._call(
            lambda: self._with_store(schedules.set_paused, self.clock, namespace, name, True)
        )

    def resume_schedule(self, name: str, namespace: str = "default") -> Job:
        """Resume planning from now; slots that fell in the pause are skipped."""
        return self._call(
            lambda: self._with_store(schedules.set_paused, self.clock, namespace, name, False)
        )

    def delete_schedule(self, name: str, namespace: str = "default") -> None:
        self._call(lambda: self._with_store(schedules.delete_job, namespace, name))

    def get_schedule(self, name: str, namespace: str = "default") -> Job:
        return self._call(lambda: self._with_store(schedules.get_job, namespace, name))

    def list_schedules(self, namespace: str | None = None) -> list[Job]:
        async def go() -> list[Job]:
            return await (await self.store()).list_jobs(namespace)

        return self._call(go)

    def trigger(
        self,
        name: str,
        payload: Any = None,
        *,
        idempotency_key: str | None = None,
        namespace: str = "default",
    ) -> int:
        """Run a job now (optionally with another payload); returns the run id."""
        return self._call(
            lambda: self._with_store(
                schedules.trigger_job, self.clock, namespace, name, payload, idempotency_key
            )
        )

    # -- limits and workers -------------------------------------------------
    def set_limit(self, scope: str, name: str, max_running: int) -> Limit:
        """A cluster-wide cap on running runs: scope ``"global"`` (name ``"*"``),
        ``"queue"`` or ``"handler"``."""
        return self._call(lambda: self._with_store(services.set_limit, scope, name, max_running))

    def clear_limit(self, scope: str, name: str) -> None:
        self._call(lambda: self._with_store(services.clear_limit, scope, name))

    def list_limits(self) -> list[Limit]:
        async def go() -> list[Limit]:
            return await (await self.store()).list_limits()

        return self._call(go)

    def list_workers(self) -> list[WorkerInfo]:
        return self._call(lambda: self._with_store(services.list_workers))

    def drain_worker(self, node_id: str) -> None:
        """The worker stops claiming and finishes what it holds."""
        self._call(lambda: self._with_store(services.drain_worker, self.clock, node_id))

    def resume_worker(self, node_id: str) -> None:
        self._call(lambda: self._with_store(services.resume_worker, self.clock, node_id))

    def leader(self) -> LeaderInfo | None:
        """Who leads the cluster now (holder, term, since when, until when)."""

        async def go() -> LeaderInfo | None:
            return await (await self.store()).leader()

        return self._call(go)

    # -- working ------------------------------------------------------------
    def run_worker(
        self,
        concurrency: int = 8,
        node_id: str | None = None,
        queues: Iterable[str] | None = None,
        tags: Iterable[str] = (),
        http: WorkerHttp | None = None,
    ) -> None:
        """Work until SIGTERM or SIGINT, then shut down gracefully. Blocking. ``http``:
        serve /metrics and health probes beside the worker (``rota worker --http``)."""
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

        asyncio.run(main())

    def worker_options(
        self,
        concurrency: int = 8,
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
        """Run a worker on the current event loop until ``stop`` is set."""
        worker = Worker(
            await self.store(), self.registry, self.settings, self.clock, options or WorkerOptions()
        )
        await worker.run(stop)
        return worker

    # -- closing ------------------------------------------------------------
    async def aclose(self) -> None:
        """Close the store of the running loop."""
        with self._store_lock:
            opening = self._stores.pop(asyncio.get_running_loop(), None)
        store = await _opened(opening)
        if store is not None:
            await store.close()

    def close(self) -> None:
        """Close every store this App opened, and its sync loop thread."""
        if self._sync is not None:
            sync = self._sync
            with self._store_lock:
                opening = self._stores.pop(sync.loop, None)
            store = sync.call(_opened(opening))
            if store is not None:
                sync.call(store.close())
            sync.stop()
            self._sync = None


def _retrieve_quietly(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()


async def _opened(opening: asyncio.Task[Store] | None) -> Store | None:
    """The store an opening task produced, if it did (waiting for it if it still runs)."""
    if opening is None:
        return None
    try:
        return await opening
    except Exception:  # noqa: BLE001 - it never opened: nothing to close
        return None
