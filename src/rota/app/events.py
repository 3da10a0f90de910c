"""An App's events: publish (or in the caller's transaction), subscribe jobs and
workflows to them, and list them (rota.services.events)."""

from __future__ import annotations

from typing import Any

from rota.app.base import AppBase
from rota.bootstrap import caller_connection_publish
from rota.caller_connections import async_driver_connection, driver_connection
from rota.domain.events import Event, Published, Subscription, WorkflowStarts
from rota.errors import UnsupportedFeature
from rota.services import events
from rota.services import workflows as workflow_service
from rota.store.optional import CallerConnectionPublish


class AppEvents(AppBase):
    """Publishing events and subscribing to them."""

    def publish(
        self,
        name: str,
        payload: Any = None,
        *,
        event_id: str | None = None,
        namespace: str = "default",
        connection: Any = None,
    ) -> Published:
        """Publish an event: every job subscribed to ``name`` whose filter matches gets
        one run, in the same transaction. The same ``event_id`` again (in the namespace,
        for the name) creates nothing. ``connection`` (PostgreSQL): a psycopg connection
        (or a SQLAlchemy Connection or Session on psycopg) whose open transaction the
        event and its runs are written in."""
        event = events.new_event(name, payload, event_id, namespace)
        starts = self.workflow_starts()
        if connection is not None:
            port = self._caller_publish()
            # Checked before the caller's transaction writes the event (issue 31).
            starts = self._stores.use(events.checked_starts, event, starts)
            connection = driver_connection(connection)
            return port.publish_on_sync(connection, event, self.clock.db_now(), starts)
        return self._stores.use(events.publish, self.clock, event, starts)

    async def publish_async(
        self,
        name: str,
        payload: Any = None,
        *,
        event_id: str | None = None,
        namespace: str = "default",
        connection: Any = None,
    ) -> Published:
        """The same as :meth:`publish`, from async code (``connection`` may be async)."""
        event = events.new_event(name, payload, event_id, namespace)
        starts = self.workflow_starts()
        if connection is not None:
            port = self._caller_publish()
            starts = await events.checked_starts(await self.store(), event, starts)
            connection = await async_driver_connection(connection)
            return await port.publish_on(connection, event, self.clock.db_now(), starts)
        return await events.publish(await self.store(), self.clock, event, starts)

    def workflow_starts(self) -> WorkflowStarts:
        """The step runs of a saved workflow, from this App's handlers
        (rota.services.workflows.starting)."""
        return workflow_service.starting(self.registry)

    def _caller_publish(self) -> CallerConnectionPublish:
        port = caller_connection_publish(self.settings)
        if port is None:
            raise UnsupportedFeature("publish(connection=...) needs the PostgreSQL store")
        return port

    def subscribe(
        self,
        event_name: str,
        *,
        job: str | None = None,
        workflow: str | None = None,
        where: dict[str, Any] | None = None,
        namespace: str = "default",
    ) -> Subscription:
        """Make the job ``job`` run (or the saved workflow ``workflow`` start) once
        per published ``event_name`` whose payload matches ``where`` (payload paths to
        values, e.g. ``{"customer.tier": "gold"}``; see rota.domain.events).
        Subscribing again replaces ``where``."""
        return self._stores.use(
            events.subscribe,
            self.clock,
            event_name,
            job=job,
            workflow=workflow,
            event_filter=where,
            namespace=namespace,
        )

    def unsubscribe(
        self,
        event_name: str,
        *,
        job: str | None = None,
        workflow: str | None = None,
        namespace: str = "default",
    ) -> bool:
        return self._stores.use(
            events.unsubscribe, event_name, job=job, workflow=workflow, namespace=namespace
        )

    def list_events(self, **filters: Any) -> list[Event]:
        """Published events, newest first (``name=``, ``namespace=``, ``before_id=``,
        ``limit=``)."""
        return self._stores.use(events.list_events, **filters)
