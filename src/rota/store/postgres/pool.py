"""Connection pools that never hand out a connection the server has already ended.

A connection that sat idle in the pool may be dead without anyone knowing: the server
was restarted, an administrator or ``idle_session_timeout`` ended it, a proxy closed
it. The first call to take it would fail with "the server is unreachable" although the
server is back. Ending a connection always reaches its socket: the backend sends its
FATAL error and closes, or its process dies and the kernel closes for it. An idle
connection is otherwise sent nothing (it listens for no notifications). So before a
connection is handed out, its socket is polled without waiting: nothing to read, and it
goes out as it is, at the cost of one system call and no round trip; something to
read, and it is checked with one empty round trip, which a dead one fails, and the
pool takes another.

An earlier rule checked every connection idle for 2 s or more with that round trip. It
put a round trip in front of the first call after any pause (an enqueue after a quiet
second, an idle worker's claim), and it missed a connection ended less than 2 s before
it was taken, which the poll sees. Neither rule can see a peer that vanished without
closing (a host powered off): no byte arrives, and the call that finds out fails as a
dropped connection does anywhere (DESIGN.md, "Failures").
"""

from __future__ import annotations

import select
from typing import Any

import psycopg
import psycopg_pool


def has_something_to_read(conn: psycopg.AsyncConnection[Any]) -> bool:
    """Whether the server sent this idle connection anything: an error and the close
    that ends it, or (harmless) a notice or a changed parameter. Never waits."""
    try:
        fd = conn.pgconn.socket
    except psycopg.OperationalError:  # no socket left: closed already
        return True
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(0))  # POLLHUP and POLLERR come whether asked or not
    readable, _, _ = select.select([fd], [], [], 0)  # Windows: no poll()
    return bool(readable)


class CheckedPool(psycopg_pool.AsyncConnectionPool):
    def __init__(self, url: str, **options: Any) -> None:
        super().__init__(url, check=self._check_if_ended, **options)

    async def _check_if_ended(self, conn: psycopg.AsyncConnection[Any]) -> None:
        if conn.broken or has_something_to_read(conn):
            await self.check_connection(conn)  # raises for a dead one: the pool replaces it
