"""A test's own App: a fresh database, the handlers of the App under test, a fake clock."""

from __future__ import annotations

from rota.app import App
from rota.clock import Clock
from rota.services.workflow_schedules import STARTER


def isolated_app(
    database_url: str, *, handlers_from: App | None = None, clock: Clock | None = None
) -> App:
    """An App on ``database_url`` with ``handlers_from``'s handlers (the App your code
    enqueues on and your workers run), so a test drains them against its own database.
    Close it when done (the ``rota_app`` fixture does)."""
    app = App(database_url, clock=clock)
    if handlers_from is not None:
        for spec in handlers_from.registry.specs():
            # Every App registers its own workflow starter, bound to itself.
            if spec.name != STARTER:
                app.registry.register(spec)
    return app
