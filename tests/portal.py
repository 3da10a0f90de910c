"""An event loop in a thread, so that synchronous hypothesis examples can drive an app
that lives in one loop (the API's and the dashboard's fuzz tests share it)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any


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
