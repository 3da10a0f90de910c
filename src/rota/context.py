"""What a handler receives besides its payload."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import structlog

from rota.domain.runs import ClaimedRun, LogLine
from rota.errors import UnsupportedFeature


class RunLogger:
    """Log lines that are stored with the run (and also go to the process log)."""

    def __init__(self, run: ClaimedRun, now: Callable[[], datetime]) -> None:
        self._run = run
        self._now = now
        self._lines: list[LogLine] = []
        self._lock = threading.Lock()  # sync handlers log from their thread

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
        with self._lock:
            self._lines.append(line)
        process_log = structlog.get_logger("rota.run")
        getattr(process_log, level)(
            message,
            run_id=self._run.run_id,
            handler=self._run.handler,
            attempt=self._run.attempt,
            **fields,
        )

    def debug(self, message: str, **fields: Any) -> None:
        self._emit("debug", message, fields)

    def info(self, message: str, **fields: Any) -> None:
        self._emit("info", message, fields)

    def warning(self, message: str, **fields: Any) -> None:
        self._emit("warning", message, fields)

    def error(self, message: str, **fields: Any) -> None:
        self._emit("error", message, fields)

    def take(self) -> list[LogLine]:
        with self._lock:
            lines, self._lines = self._lines, []
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
