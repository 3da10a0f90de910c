"""The scenarios, in the order the runner takes them. Each module has NAME, TITLE,
BACKEND ("postgres" or "sqlite"), TIME_LIMIT (seconds per size), ``prepare(ctx)`` and
``run(ctx)``; ``run`` ends by checking the invariants (chaos.invariants)."""

from __future__ import annotations

import importlib
from types import ModuleType

ORDER = (
    "pg_restart",
    "sigstop",
    "partition",
    "leader_kill",
    "clock_skew",
    "long_transactions",
    "terminate_backends",
    "sqlite_many",
)


def load(name: str) -> ModuleType:
    return importlib.import_module(f"chaos.scenarios.{name.replace('-', '_')}")


def names() -> list[str]:
    return [name.replace("_", "-") for name in ORDER]
