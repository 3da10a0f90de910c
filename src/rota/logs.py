"""structlog set-up for processes rota starts (workers, the CLI, the server, the demo).

Libraries should not configure logging on import, so nothing here runs unless a
process entry point calls :func:`configure`.

Exceptions are logged with their traceback and never with local variables, in both
formats: a frame's locals hold whatever the code had at hand — settings with the
signing key, request headers with a bearer token, a job's payload — and one rich
traceback with locals wrote all of them to the log (docs/security.md).
"""

from __future__ import annotations

import importlib
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

import structlog

LEVELS = ("debug", "info", "warning", "error")


def exception_formatter(colors: bool) -> structlog.typing.ExceptionRenderer:
    """The console's traceback: rich's layout, without the locals panel (and without
    colour codes when the output is not a terminal)."""
    return structlog.dev.RichTracebackFormatter(
        color_system="truecolor" if colors else None,
        show_locals=False,
        # Frames of the web stack are named but not printed with their source: they
        # are most of a request's traceback and rarely where the bug is.
        suppress=_framework_modules(),
    )


def _framework_modules() -> list[ModuleType]:
    found = []
    for name in ("anyio", "starlette", "fastapi", "uvicorn"):
        try:
            found.append(importlib.import_module(name))
        except ImportError:
            continue  # a worker-only install has no web stack
    return found


def exception_renderer() -> structlog.typing.Processor:
    """JSON's traceback: a list of frames (file, line, function) without locals."""
    return structlog.processors.ExceptionRenderer(
        structlog.tracebacks.ExceptionDictTransformer(show_locals=False)
    )


def processors(json: bool, colors: bool) -> list[structlog.typing.Processor]:
    tail: list[structlog.typing.Processor] = (
        [exception_renderer(), structlog.processors.JSONRenderer()]
        if json
        else [
            structlog.dev.ConsoleRenderer(
                colors=colors, exception_formatter=exception_formatter(colors)
            )
        ]
    )
    return [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        *tail,
    ]


def configure(level: str = "info", json: bool = False, cache: bool = True) -> None:
    if level not in LEVELS:
        from rota.errors import InvalidArgument

        raise InvalidArgument("log level", level, f"one of {', '.join(LEVELS)}")
    structlog.configure(
        processors=processors(json, colors=sys.stderr.isatty()),
        wrapper_class=structlog.make_filtering_bound_logger(getattr(logging, level.upper())),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=cache,
    )


@contextmanager
def default_setup() -> Iterator[None]:
    """For ``app.run_worker()`` called from a user's script: rota's lines at the level
    ``rota worker`` logs at (info: ADR 0026 puts succeeded runs at debug), unless the
    process set structlog up itself. Undone afterwards, and no logger is cached on the
    way, so nothing of it outlives the call."""
    if structlog.is_configured():
        yield
        return
    configure(cache=False)
    try:
        yield
    finally:
        structlog.reset_defaults()
