"""The store port's events part: publishing, subscriptions and retention (ADR 0023).

A Protocol of its own beside :class:`rota.store.port.Store` (as the webhook part is) so
event code asks only for what it uses; :class:`rota.store.sql_store.SqlStore`
implements both.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from rota.domain.events import Event, NewEvent, Published, Subscription, WorkflowStarts
from rota.domain.jobs import Job


class EventStore(Protocol):
    async def publish(
        self, event: NewEvent, now: datetime | None, starts: WorkflowStarts | None = None
    ) -> Published:
        """Store the event and make one run per matching job subscription (and start
        each matching workflow through ``starts``), in one transaction; the same
        (namespace, name, event id) again makes nothing."""

    async def list_events(
        self,
        namespaces: Sequence[str] | None,
        namespace: str | None,
        name: str | None,
        before_id: int | None,
        limit: int,
    ) -> list[Event]:
        """Events newest first, keyset-paged by id (below ``before_id``)."""

    async def prune_events(
        self, older_than: datetime, limit: int, leader_term: int | None = None
    ) -> int:
        """Delete events published before ``older_than`` (a leader duty)."""

    async def subscribe_job(
        self, job: Job, event_name: str, event_filter: dict[str, Any], now: datetime | None
    ) -> Subscription:
        """Subscribe ``job`` (again: replace its filter)."""

    async def unsubscribe_job(self, job: Job, event_name: str) -> bool: ...

    async def subscribe_workflow(
        self,
        namespace: str,
        event_name: str,
        workflow: str,
        event_filter: dict[str, Any],
        now: datetime | None,
    ) -> Subscription:
        """Subscribe the workflow ``workflow`` (again: replace its filter)."""

    async def unsubscribe_workflow(
        self, namespace: str, event_name: str, workflow: str
    ) -> bool: ...

    async def list_subscriptions_to_events(
        self, namespaces: Sequence[str] | None
    ) -> list[Subscription]: ...
