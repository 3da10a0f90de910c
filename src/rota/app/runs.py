"""An App's runs: enqueue (one, many, or in the caller's transaction), read and steer them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from rota.app.base import AppBase
from rota.bootstrap import caller_connection_enqueue
from rota.caller_connections import async_driver_connection, driver_connection
from rota.domain.runs import NewRun, Run
from rota.errors import UnsupportedFeature
from rota.services import bulk
from rota.services import runs as run_service
from rota.services.runs import RunDetail, RunRequest
from rota.store.optional import CallerConnectionEnqueue


class AppRuns(AppBase):
    """Enqueueing runs and reading and steering them (rota.services.runs)."""

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
        owner: str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> int:
        """Create a run; returns its id. A repeated idempotency key returns the id of the
        run it created first. ``tags`` add to the handler's; runs sharing a
        ``concurrency_key`` run at most ``key_limit`` at once (default: the handler's,
        1); ``deadline``: if not started by then, the run is cancelled and never runs.
        ``connection`` (PostgreSQL): a psycopg connection (or a SQLAlchemy Connection or
        Session on psycopg) whose open transaction the run is created in, so it exists
        only if that commits. ``rate_key``: the handler's and queue's rate limits count
        runs of each key apart (e.g. per customer);
        ``breaker_key``: the handler's circuit breaker trips per key (e.g. per host);
        ``owner`` (a team) and ``labels`` (key/value strings) are shown and filtered on."""
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
            owner,
            labels,
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
        runs = bulk.run_batch(self.registry, requests, self.clock.now())
        return self._stores.call(lambda: self._enqueue_async(runs))

    async def enqueue_many_async(
        self, requests: Iterable[RunRequest | Mapping[str, Any]]
    ) -> list[int]:
        # The clock only refuses deadlines already passed: read once per batch.
        runs = bulk.run_batch(self.registry, requests, self.clock.now())
        return await self._enqueue_async(runs)

    async def _enqueue_async(self, runs: Sequence[NewRun]) -> list[int]:
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

    def get_run(self, run_id: int) -> Run:
        return self._stores.use(run_service.get_run, run_id)

    def run_detail(self, run_id: int) -> RunDetail:
        return self._stores.use(run_service.run_detail, run_id)

    def list_runs(
        self,
        *,
        state: str | None = None,
        handler: str | None = None,
        queue: str | None = None,
        owner: str | None = None,
        labels: Mapping[str, str] | None = None,
        priority: int | None = None,
        before_id: int | None = None,
        limit: int = 50,
    ) -> list[Run]:
        """Runs newest first, up to ``limit`` (1-1000); every filter given must match
        (``labels``: every key with its value). Page on with ``before_id``: the last id
        of the previous page."""
        return self._stores.use(
            run_service.list_runs,
            state=state,
            handler=handler,
            queue=queue,
            owner=owner,
            labels=labels,
            priority=priority,
            before_id=before_id,
            limit=limit,
        )

    def cancel(self, run_id: int) -> Run:
        return self._stores.use(run_service.cancel, self.clock, run_id)

    def replay(self, run_id: int) -> int:
        """Re-run a finished run as a fresh run linked to it; returns the new id."""
        return self._stores.use(run_service.replay, self.clock, run_id)
