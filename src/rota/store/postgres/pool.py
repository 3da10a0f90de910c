"""Connection pools that never hand out a connection the server has already ended.

A connection that sat idle in the pool may be dead without anyone knowing: the server
was restarted, an administrator or ``idle_session_timeout`` ended it, a proxy dropped
it. The first call to take it would fail with "the server is unreachable" although the
server is back. So a connection that has been idle for a while is checked (one empty
round trip) before it is handed out, and a dead one is replaced. A connection returned
moments ago is not checked: under load the hot path pays nothing.
"""

from __future__ import annotations

import time
import weakref
from typing import Any

import psycopg
import psycopg_pool

IDLE_CHECK_SECONDS = 2.0


class CheckedPool(psycopg_pool.AsyncConnectionPool):
    def __init__(self, url: str, **options: Any) -> None:
        self._idle_check_seconds = IDLE_CHECK_SECONDS
        self._returned_at: weakref.WeakKeyDictionary[psycopg.AsyncConnection[Any], float] = (
            weakref.WeakKeyDictionary()
        )
        super().__init__(url, check=self._check_if_idle, reset=self._mark_returned, **options)

    async def _mark_returned(self, conn: psycopg.AsyncConnection[Any]) -> None:
        self._returned_at[conn] = time.monotonic()

    async def _check_if_idle(self, conn: psycopg.AsyncConnection[Any]) -> None:
        returned = self._returned_at.get(conn)
        if returned is None or time.monotonic() - returned >= self._idle_check_seconds:
            await self.check_connection(conn)  # raises for a dead one: the pool replaces it
