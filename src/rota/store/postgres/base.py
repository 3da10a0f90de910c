"""PostgreSQL plumbing: session limits, pool options and error translation."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import psycopg
import psycopg_pool

from rota.errors import StoreConflict, StoreError, StoreUnavailable
from rota.observe import hooks
from rota.redact import redact_url

T = TypeVar("T")

NOTIFY_CHANNEL = "rota_wakeup"
MIGRATION_LOCK = 0x726F7461  # "rota": an advisory lock so concurrent starters migrate once
# Keepalives catch a half-open TCP connection, which otherwise raises nothing.
CONNECT_OPTIONS: dict[str, Any] = {
    "keepalives": 1,
    "keepalives_idle": 10,
    "keepalives_interval": 5,
    "keepalives_count": 3,
    "connect_timeout": 5,
}


@dataclass(frozen=True)
class SessionLimits:
    """Server-side limits of one kind of rota session, in seconds (0: none).

    They end a transaction or a wait that a stopped or cut-off process would otherwise
    hold for ever: ``idle_in_transaction`` ends a session that sits in an open
    transaction (a SIGSTOPped worker that holds row locks), ``lock_timeout`` bounds a
    wait for another session's lock, ``statement`` bounds one statement."""

    statement: float
    lock: float
    idle_in_transaction: float

    def options(self) -> str:
        """The libpq ``options`` that set these (and UTC) when a session starts."""
        settings = {
            "timezone": "UTC",
            "statement_timeout": _ms(self.statement),
            "lock_timeout": _ms(self.lock),
            "idle_in_transaction_session_timeout": _ms(self.idle_in_transaction),
        }
        return " ".join(f"-c {name}={value}" for name, value in settings.items())


def _ms(seconds: float) -> str:
    return str(round(seconds * 1000))


# The hot path (claims, renewals, completions, the leader's duties, reads) runs single
# statements in autocommit, and its few transactions are short: a session idle inside
# one for long has stalled. Nothing there should wait long for a lock either: a renewal
# that waits is retried at the next beat rather than queueing behind a stuck session.
HOT_PATH_LIMITS = SessionLimits(statement=60, lock=10, idle_in_transaction=10)
# Migrations may rewrite big tables; waiting for other sessions' locks is bounded so a
# start-up does not hang behind a long transaction without saying so.
MIGRATION_LIMITS = SessionLimits(statement=0, lock=60, idle_in_transaction=600)
# LISTEN holds no transaction and no lock: no limits needed, and a statement timeout
# would only end a healthy wait.
LISTEN_LIMITS = SessionLimits(statement=0, lock=0, idle_in_transaction=0)


@dataclass(frozen=True)
class HandlerPoolOptions:
    """The pool that lends connections to handlers (``ctx.transaction()``): at most
    ``size`` at once, a handler waits at most ``wait_seconds`` for one, and its
    sessions carry ``limits``."""

    size: int = 8
    wait_seconds: float = 10.0
    limits: SessionLimits = SessionLimits(statement=300, lock=30, idle_in_transaction=60)


DEFAULT_HANDLER_POOL = HandlerPoolOptions()


# A statement or transaction that meets a serialization failure did nothing and may
# simply run again. Under READ COMMITTED the one expected here is a row moved to the
# other home (ADR 0027) by a statement that committed while this one waited for it:
# PostgreSQL refuses to follow a row across partitions where it would follow an update
# within one. Run again, the statement sees where the row is now. Each conflict counts
# in rota_db_errors_total{kind="conflict"}.
RERUNS_AFTER_CONFLICT = 3


async def rerun_on_conflict(attempt: Callable[[], Awaitable[T]]) -> T:
    """``attempt()`` (whose errors are already translated), run again after a conflict."""
    for reruns_left in range(RERUNS_AFTER_CONFLICT, -1, -1):
        try:
            return await attempt()
        except StoreConflict:
            if reruns_left == 0:
                raise
    raise AssertionError("unreachable")


@contextlib.contextmanager
def _translated() -> Any:
    """Driver errors become rota errors; nothing above the store sees psycopg."""
    try:
        yield
    except psycopg.errors.SerializationFailure as exc:
        hooks.db_error("conflict")
        raise StoreConflict(f"PostgreSQL could not follow a concurrent write: {exc}") from exc
    except (
        psycopg.OperationalError,
        psycopg_pool.PoolTimeout,
        # The server ended a session that sat in a transaction too long (a stalled
        # process): the link is gone, like any other dropped connection.
        psycopg.errors.IdleInTransactionSessionTimeout,
    ) as exc:
        hooks.db_error("unavailable")
        raise StoreUnavailable(f"PostgreSQL is unreachable: {exc}".strip()) from exc
    except psycopg.Error as exc:
        # The first line and SQLSTATE only, and not chained: PostgreSQL's DETAIL and
        # CONTEXT lines quote the data it refused (a job's payload), and a chained
        # driver error would carry them into every traceback (docs/security.md).
        state = getattr(exc, "sqlstate", None) or "no SQLSTATE"
        hooks.db_error("refused")
        raise StoreError(
            f"PostgreSQL refused the operation: {_first_line(exc)} ({state})"
        ) from None


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _redact(url: str) -> str:
    """Hide a password in a URL before it goes into a message (the one helper rota
    uses wherever it prints a database URL)."""
    return redact_url(url)
