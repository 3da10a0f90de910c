"""Assertions on what an App has enqueued, read from its store: a failure lists what
was enqueued instead, so the test's output shows the near miss."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rota.domain.runs import Run
from rota.errors import NotEnqueued

if TYPE_CHECKING:
    from rota.app import App

_ANY = object()
LISTED = 20  # runs a failure message lists, newest first


def enqueued(app: App, handler: str | None = None, *, limit: int = 1000) -> list[Run]:
    """The App's runs (of ``handler``, if given), oldest first."""
    return list(reversed(app.list_runs(handler=handler, limit=limit)))


def assert_enqueued(
    app: App, handler: str, payload: Any = _ANY, *, count: int | None = None
) -> list[Run]:
    """Assert that runs of ``handler`` were enqueued (with exactly ``payload``, if
    given; exactly ``count`` of them, if given) and return them, oldest first."""
    runs = [run for run in enqueued(app, handler) if payload is _ANY or run.payload == payload]
    if runs and (count is None or len(runs) == count):
        return runs
    wanted = f"{handler!r}" + ("" if payload is _ANY else f" with payload {payload!r}")
    if count is not None:
        wanted = f"{count} run(s) of {wanted}, found {len(runs)}"
    else:
        wanted = f"a run of {wanted}"
    raise NotEnqueued(f"expected {wanted}; {_listing(app)}")


def assert_not_enqueued(app: App, handler: str, payload: Any = _ANY) -> None:
    """Assert that no run of ``handler`` (with ``payload``, if given) was enqueued."""
    runs = [run for run in enqueued(app, handler) if payload is _ANY or run.payload == payload]
    if runs:
        raise NotEnqueued(f"expected no run of {handler!r}; {_listing(app)}")


def _listing(app: App) -> str:
    runs = app.list_runs(limit=LISTED)
    if not runs:
        return "nothing was enqueued"
    lines = [f"  #{r.id} {r.handler} {r.payload!r} ({r.state.value})" for r in reversed(runs)]
    more = " (the newest shown)" if len(runs) == LISTED else ""
    return "enqueued instead" + more + ":\n" + "\n".join(lines)
