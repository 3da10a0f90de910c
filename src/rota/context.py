"""What a handler receives besides its payload."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import structlog

from rota.domain.runs import (
    LOG_BYTES_PER_ATTEMPT,
    LOG_LINES_PER_ATTEMPT,
    ClaimedRun,
    LogLine,
)
from rota.errors import UnsupportedFeature

# Keys the process log sets itself: a handler's field of the same name is renamed
# there (it is stored in the run's log as given).
_PROCESS_LOG_KEYS = frozenset({"event", "run_id", "handler", "attempt", "level", "timestamp"})
LIVE_BATCH_LINES = 100  # this many waiting lines wake the live flush before its interval


class RunLogger:
    """Log lines that are stored with the run (and also go to the process log).

    Lines wait here until the worker takes them: while the attempt runs (the live
    flush, so the dashboard can tail them) and when it ends (with the outcome). An
    attempt keeps at most ``max_lines`` lines and ``max_bytes`` bytes; past either,
    lines are counted, one line says so when it starts, and the last says how many.
    """

    def __init__(
        self,
        run: ClaimedRun,
        now: Callable[[], datetime],
        max_lines: int = LOG_LINES_PER_ATTEMPT,
        max_bytes: int = LOG_BYTES_PER_ATTEMPT,
    ) -> None:
        self._run = run
        self._now = now
        self._lines: list[LogLine] = []
        self._lock = threading.Lock()  # sync handlers log from their thread
        self._max_lines = max_lines
        self._max_bytes = max_bytes
        self._kept_lines = 0
        self._kept_bytes = 0
        self._dropped = 0
        # Called (from any thread) when lines start waiting, or many have: the worker
        # sets it to wake its live flush. None: lines wait for the attempt's end.
        # The argument says whether LIVE_BATCH_LINES are waiting (write without delay).
        self.on_waiting: Callable[[bool], None] | None = None

    def _emit(self, level: str, message: str, fields: dict[str, Any]) -> None:
        if self._run.correlation_id is not None:
            # The request that created the run: its lines can be found by that id.
            fields = {"correlation_id": self._run.correlation_id, **fields}
        try:
            fields_json = json.dumps(fields, default=str)
        except (TypeError, ValueError):
            fields_json = json.dumps({"unserialisable": repr(fields)})
        line = LogLine(
            self._run.run_id, self._run.attempt, self._now(), level, message, fields_json
        )
        self._keep(line)
        process_log = structlog.get_logger("rota.run")
        getattr(process_log, level)(
            message,
            **{(f"field_{k}" if k in _PROCESS_LOG_KEYS else k): v for k, v in fields.items()},
            run_id=self._run.run_id,
            handler=self._run.handler,
            attempt=self._run.attempt,
        )

    def _keep(self, line: LogLine) -> None:
        size = len(line.message) + len(line.fields_json)
        with self._lock:
            if self._kept_lines >= self._max_lines or self._kept_bytes + size > self._max_bytes:
                self._dropped += 1
                if self._dropped > 1:
                    return
                line = self._marker(
                    f"log cap reached ({self._max_lines} lines or {self._max_bytes} bytes "
                    "per attempt): further lines are dropped and counted"
                )
            else:
                self._kept_lines += 1
                self._kept_bytes += size
            self._lines.append(line)
            waiting = len(self._lines)
        if self.on_waiting is not None and waiting in (1, LIVE_BATCH_LINES):
            self.on_waiting(waiting == LIVE_BATCH_LINES)

    def _marker(self, message: str, **fields: Any) -> LogLine:
        return LogLine(
            self._run.run_id,
            self._run.attempt,
            self._now(),
            "warning",
            message,
            json.dumps(fields) if fields else "{}",
        )

    # ``message`` is positional-only: a field may be named anything, "message" too.
    def debug(self, message: str, /, **fields: Any) -> None:
        self._emit("debug", message, fields)

    def info(self, message: str, /, **fields: Any) -> None:
        self._emit("info", message, fields)

    def warning(self, message: str, /, **fields: Any) -> None:
        self._emit("warning", message, fields)

    def error(self, message: str, /, **fields: Any) -> None:
        self._emit("error", message, fields)

    @property
    def waiting(self) -> bool:
        return bool(self._lines)

    @property
    def dropped(self) -> int:
        return self._dropped

    def take(self, final: bool = False) -> list[LogLine]:
        """The lines waiting; ``final`` (the attempt is over) adds the count of lines
        dropped past the cap, if any."""
        with self._lock:
            lines, self._lines = self._lines, []
            if final and self._dropped:
                lines.append(
                    self._marker(f"{self._dropped} log lines dropped", dropped=self._dropped)
                )
                self._dropped = 0
        return lines


class CancelSignal:
    """Set once when the run should stop; readable from any thread.

    A plain flag serves ``is_set`` (a bool store is atomic under the GIL); the
    threading.Event behind ``wait`` is made only for handlers that block on it, since
    creating one per run costs the hot path more than the rest of the context.
    """

    def __init__(self) -> None:
        self._flag = False
        self._event: threading.Event | None = None
        self._lock = threading.Lock()

    def set(self) -> None:
        with self._lock:
            self._flag = True
            if self._event is not None:
                self._event.set()

    def is_set(self) -> bool:
        return self._flag

    def wait(self, timeout: float | None = None) -> bool:
        """Block (in a plain-function handler) until set or ``timeout`` passes."""
        with self._lock:
            if self._event is None:
                self._event = threading.Event()
                if self._flag:
                    self._event.set()
        return self._event.wait(timeout)


@dataclass
class RunContext:
    """Handed to every handler call.

    ``fence`` is this attempt's fencing token: pass it to systems you write to so they
    can refuse a stale attempt's write. ``idempotency_key`` stays the same across every
    attempt of a run: pass it to APIs that deduplicate retries.
    """

    run_id: int
    handler: str
    queue: str
    attempt: int
    max_attempts: int
    fence: int
    idempotency_key: str
    worker_id: str
    log: RunLogger
    cancelled: CancelSignal = field(default_factory=CancelSignal)
    _open_transaction: Callable[[], Any] | None = None
    _transaction: Any = None
    _step_input: Any = None  # a workflow step's: its parents' results, the workflow payload

    @property
    def parents(self) -> dict[str, Any]:
        """A workflow step's parents' results by step name (a map's: the list of its
        items' results; a parent that did not succeed: None). Empty outside a workflow
        and on a map's items, whose own payload is their item."""
        return dict((self._step_input or {}).get("parents") or {})

    @property
    def workflow_payload(self) -> Any:
        """The payload its workflow run was started with (None outside a workflow)."""
        return (self._step_input or {}).get("workflow_payload")

    def is_cancelled(self) -> bool:
        """True once an operator asked to cancel, a timeout passed, or the worker lost
        the lease. Long-running handlers should check it and return early."""
        return self.cancelled.is_set()

    async def transaction(self) -> Any:
        """A PostgreSQL connection inside a transaction that commits together with this
        run's completion, under its fence, when the handler returns; it rolls back if
        the handler fails or the fence was lost. Async handlers only, PostgreSQL only.
        Calling it again returns the same connection.

        The connection comes from a pool of its own (``handler_pool_size``), never from
        the one that renews leases; with none free within ``handler_pool_wait_seconds``
        this raises :class:`~rota.errors.HandlerTransactionsExhausted`. The session ends
        a transaction left idle for ``handler_idle_in_transaction_seconds``. If the
        connection breaks, the attempt is retried without being counted."""
        if self._transaction is None:
            if self._open_transaction is None:
                raise UnsupportedFeature(
                    "ctx.transaction() needs the PostgreSQL store and an async handler"
                )
            self._transaction = await self._open_transaction()
        return self._transaction.connection
