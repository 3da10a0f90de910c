"""The change feed: one poller per server process, however many pages listen. A real
uvicorn server on this event loop, 100 concurrent SSE clients, and the store's
change-feed queries counted."""

from __future__ import annotations

import asyncio
import socket
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import httpx
import uvicorn

import rota
from rota.asgi import create_api
from rota.dashboard import context_of
from rota.dashboard.sessions import COOKIE, encode, new_session, session_key
from rota.domain.access import Principal, Scope
from rota.domain.runs import NewRun
from tests.api.conftest import SIGNING_KEY, api_settings
from tests.helpers import eventually

CLIENTS = 100
FEED_QUERIES = ("live_queue_counts", "finished_counts")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _count_calls(store: Any, names: tuple[str, ...], calls: Counter[str]) -> None:
    for name in names:
        original: Callable[..., Awaitable[Any]] = getattr(store, name)

        async def counted(*args: Any, _name: str = name, _call: Any = original) -> Any:
            calls[_name] += 1
            return await _call(*args)

        setattr(store, name, counted)


async def _listen(
    client: httpx.AsyncClient, url: str, seen: Counter[int], index: int, stop: asyncio.Event
) -> None:
    async with client.stream("GET", url) as answer:
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("text/event-stream")
        async for line in answer.aiter_lines():
            if line.startswith("event: change"):
                seen[index] += 1
            if stop.is_set():
                return


async def test_a_hundred_pages_share_one_poller(rota_app: rota.App) -> None:
    api = create_api(rota_app, api_settings())
    feed = context_of(api).feed
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(api, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    serving = asyncio.create_task(server.serve())
    await eventually(lambda: _true(server.started), timeout=30, what="the server to start")
    store = await rota_app.store()
    calls: Counter[str] = Counter()
    _count_calls(store, FEED_QUERIES, calls)
    principal = Principal("ana", "jwt", frozenset(Scope), None)
    cookie = encode(new_session(principal, datetime.now(UTC), None, None), session_key(SIGNING_KEY))
    seen: Counter[int] = Counter()
    stop = asyncio.Event()
    limits = httpx.Limits(max_connections=CLIENTS + 10)
    async with httpx.AsyncClient(
        base_url=f"http://127.0.0.1:{port}", cookies={COOKIE: cookie}, limits=limits, timeout=30
    ) as client:
        listeners = [
            asyncio.create_task(_listen(client, "/events", seen, i, stop)) for i in range(CLIENTS)
        ]
        try:
            await eventually(lambda: _true(feed.listeners == CLIENTS), what="100 listeners")
            # Each page gets the poller's first reading as a change (what it may have
            # missed before it connected); then one change for the run enqueued.
            await eventually(lambda: _true(len(seen) == CLIENTS), what="every page's first event")
            before = dict(seen)
            await store.enqueue([NewRun(handler="anything", payload_json="null")], None)
            await eventually(
                lambda: _true(all(seen[i] > before[i] for i in range(CLIENTS))),
                what="every page to hear of the new run",
            )
        finally:
            stop.set()
            for task in listeners:
                task.cancel()
            await asyncio.gather(*listeners, return_exceptions=True)
    await eventually(lambda: _true(feed.listeners == 0), what="the listeners to leave")
    # Compared once the poller has ended by itself: a snapshot taken during a reading
    # would see one query of it made and the other not yet.
    await eventually(lambda: _true(not feed.polling), what="the poller to stop")
    # One poller made every reading: each reading is one query of each kind, whatever
    # the number of pages listening (100 pollers would have made 100 per interval).
    assert feed.reads >= 2
    assert calls == {name: feed.reads for name in FEED_QUERIES}
    server.should_exit = True
    await asyncio.wait_for(serving, timeout=30)


async def _true(value: bool) -> bool:
    return value
