"""structlog set-up for processes rota starts (workers, the CLI, the demo).

Libraries should not configure logging on import, so nothing here runs unless a
process entry point calls :func:`configure`.
"""

from __future__ import annotations

import logging
import sys

import structlog

LEVELS = ("debug", "info", "warning", "error")


def configure(level: str = "info", json: bool = False) -> None:
    if level not in LEVELS:
        from rota.errors import InvalidArgument

        raise InvalidArgument("log level", level, f"one of {', '.join(LEVELS)}")
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer()
        if json
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(getattr(logging, level.upper())),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=True,
    )
