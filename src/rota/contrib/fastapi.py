"""rota in a FastAPI (or Starlette) application.

* :func:`lifespan` opens the App's store when the application starts (a database that
  cannot be reached, or a schema too new, fails the start, not the first request) and
  closes the App when it stops.
* :data:`Enqueue` is a dependency that hands a route an :class:`Enqueuer`: ``await
  enqueue("send-report", payload)``; with ``connection=`` (a psycopg ``AsyncConnection``,
  or a SQLAlchemy ``AsyncConnection``/``AsyncSession`` on psycopg) the run is written
  in that open transaction and exists only if it commits (PostgreSQL).

See docs/fastapi.md and examples/fastapi_app.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Annotated, Any

from fastapi import Depends, Request

from rota.app import App
from rota.domain.events import Published
from rota.errors import RotaError

# The App's name in the lifespan state (request.state.rota_app) and the app's state.
STATE_KEY = "rota_app"


def lifespan(app: App) -> Callable[[Any], AbstractAsyncContextManager[dict[str, Any]]]:
    """``FastAPI(lifespan=lifespan(app))``. With a lifespan of your own, enter this one
    inside it and yield its state with yours: ``async with lifespan(app)(web) as rota:
    yield {**rota, ...}``."""

    @asynccontextmanager
    async def opened(web: Any) -> AsyncIterator[dict[str, Any]]:
        await app.store()  # opened and migrated now, on the server's loop
        # In the lifespan state (request.state) and, for servers and test clients that
        # keep no lifespan state, in the application's own state too.
        web.state.rota_app = app
        try:
            yield {STATE_KEY: app}
        finally:
            await app.aclose()  # the server loop's store
            # The sync door's loop thread (app.enqueue from a plain route) is joined in
            # a thread: close() blocks until it has stopped.
            await asyncio.to_thread(app.close)

    return opened


class Enqueuer:
    """What a route gets from :data:`Enqueue`: the App's async enqueue and publish."""

    def __init__(self, app: App) -> None:
        self.app = app

    async def __call__(self, handler: str, payload: Any = None, **options: Any) -> int:
        """Create a run (options as :meth:`rota.App.enqueue`, ``connection=`` included);
        its id."""
        return await self.app.enqueue_async(handler, payload, **options)

    async def publish(self, name: str, payload: Any = None, **options: Any) -> Published:
        """Publish an event (options as :meth:`rota.App.publish`)."""
        return await self.app.publish_async(name, payload, **options)


class LifespanMissing(RotaError):
    """A route asked for :data:`Enqueue` in an application started without
    :func:`lifespan`."""

    def __init__(self) -> None:
        super().__init__(
            "no rota App in this application's state: create it with "
            "FastAPI(lifespan=rota.contrib.fastapi.lifespan(app))"
        )


def enqueuer(request: Request) -> Enqueuer:
    """The dependency behind :data:`Enqueue`."""
    app = getattr(request.state, STATE_KEY, None) or getattr(request.app.state, STATE_KEY, None)
    if not isinstance(app, App):
        raise LifespanMissing
    return Enqueuer(app)


Enqueue = Annotated[Enqueuer, Depends(enqueuer)]
