"""Which event loop a worker process runs on (ADR 0019).

``auto`` (the default of ``rota worker`` and ``App.run_worker``) is uvloop when it is
installed (``pip install 'rota[uvloop]'``) and asyncio's own loop otherwise. uvloop
takes a fifth to a third off the worker's CPU per run on the drain (docs/benchmarks.md);
it is not a hard dependency because it has no Windows build and some debuggers and
profilers only know asyncio's loop. ``asyncio`` or ``uvloop`` pick one explicitly
(``uvloop`` fails clearly when it is missing).
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from rota.errors import InvalidArgument

T = TypeVar("T")
LOOPS = ("auto", "uvloop", "asyncio")


def resolve(choice: str = "auto") -> str:
    """The loop ``choice`` means here: ``uvloop`` or ``asyncio``."""
    if choice not in LOOPS:
        raise InvalidArgument("loop", choice, " or ".join(LOOPS))
    installed = importlib.util.find_spec("uvloop") is not None
    if choice == "uvloop" and not installed:
        raise InvalidArgument("loop", choice, "auto or asyncio (uvloop is not installed)")
    return "uvloop" if choice == "uvloop" or (choice == "auto" and installed) else "asyncio"


def _factory(loop: str) -> Callable[[], asyncio.AbstractEventLoop] | None:
    if loop == "asyncio":
        return None
    import uvloop

    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def run(main: Coroutine[Any, Any, T], choice: str = "auto") -> T:
    """``asyncio.run(main)`` on the loop ``choice`` resolves to."""
    try:
        factory = _factory(resolve(choice))
    except BaseException:
        main.close()  # never awaited: say nothing about it
        raise
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(main)
