"""The library API: ``rota.App``.

The core is async. The plain (sync) methods are thin doors into it: they run the same
coroutine on a private event loop thread (rota.engine.loop_stores), so there is one
implementation of each operation, usable from scripts, web views and notebooks alike.

``App`` holds the library's surface and little else: handlers live in a
:class:`~rota.handlers.Registry`, stores in :class:`~rota.engine.loop_stores.LoopStores`
(one per event loop), the use cases in rota.services (runs, cluster, controls,
schedules, ...), and a working node is assembled by rota.engine.node.

Its methods come in parts, one module of this package each: handlers, runs (enqueue,
read, steer), workflows, events, schedules, controls (limits, rates, breakers, workers)
and working, over base (the state they share and the doors to the stores).
"""

from __future__ import annotations

import asyncio

from rota.app.base import AppBase
from rota.app.controls import AppControls
from rota.app.events import AppEvents
from rota.app.handlers import AppHandlers
from rota.app.runs import AppRuns
from rota.app.schedules import AppSchedules
from rota.app.workflows import AppWorkflows
from rota.app.working import AppWorking
from rota.clock import Clock, SystemClock
from rota.config import Settings
from rota.engine.loop_stores import LoopStores
from rota.handlers import Registry
from rota.services import workflow_schedules


class App(
    AppHandlers,
    AppRuns,
    AppWorkflows,
    AppEvents,
    AppSchedules,
    AppControls,
    AppWorking,
    AppBase,
):
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
