"""An event loop in a thread, so that synchronous hypothesis examples can drive an app
that lives in one loop (the API's and the dashboard's fuzz tests share it)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterator
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

import rota
from rota.asgi import create_api
from tests.api.conftest import api_settings, make_rota_app, serving


class Portal:
    """An event loop in a thread, so that synchronous hypothesis examples can call the
    API (and its store) in the one loop they live in."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def call(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=60)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()


def database_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, name: str
) -> str:
    """A module fixture's fresh database of the kind ``request.param`` names."""
    if request.param == "postgres":
        return str(request.getfixturevalue("pg_migrated"))
    return f"sqlite:///{tmp_path_factory.mktemp(name)}/rota.db"


@dataclass
class Served:
    """The app and its API over one database, served in a portal's loop."""

    portal: Portal
    app: rota.App
    api: FastAPI
    client: httpx.AsyncClient  # with the API's lifespan entered
    stack: AsyncExitStack  # what else a fixture opens in the portal, closed with it


@contextmanager
def served_in_portal(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, name: str
) -> Iterator[Served]:
    """A module fixture's app over a fresh database of the kind ``request.param``
    names, its API served in a portal (a generous failed-authentication budget: fuzzing
    sends many)."""
    app = make_rota_app(database_url(request, tmp_path_factory, name))
    api = create_api(app, api_settings(failed_auth_burst=100_000))
    portal = Portal()
    stack = AsyncExitStack()
    try:
        client = portal.call(stack.enter_async_context(serving(api)))
        yield Served(portal, app, api, client, stack)
    finally:
        portal.call(stack.aclose())
        portal.call(app.aclose())
        portal.close()
