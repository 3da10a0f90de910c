"""Request and response bodies of the event routes (ADR 0023)."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from rota.api.schemas.fields import Name, Request
from rota.domain.events import MAX_EVENT_ID, Event, Published, Subscription

EventId = Annotated[str, Field(min_length=1, max_length=MAX_EVENT_ID, examples=["order-8812"])]


class EventPublish(Request):
    """An event. The same ``name`` and ``id`` again (in the namespace) is the same
    event: nothing new is created. Without ``id`` a random one is given (then a retried
    request is a new event). ``payload``: at most 65,536 bytes of JSON (MAX_EVENT_PAYLOAD_BYTES)."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [{"name": "order.created", "id": "order-8812", "payload": {"total": 42}}]
        },
    )

    name: Name
    id: EventId | None = None
    payload: JsonValue = None


class EventOut(BaseModel):
    id: int = Field(description="The event's row id (the keyset cursor's key).")
    namespace: str
    name: str
    event_id: str
    payload: Any
    published_at: datetime
    runs_created: int

    @classmethod
    def of(cls, event: Event) -> EventOut:
        return cls(**asdict(event))


class EventPublished(BaseModel):
    """``created`` false: the event was published before; ``run_ids`` is empty then."""

    event: EventOut
    created: bool
    run_ids: list[int]

    @classmethod
    def of(cls, published: Published) -> EventPublished:
        return cls(
            event=EventOut.of(published.event),
            created=published.created,
            run_ids=list(published.run_ids),
        )


class EventPage(BaseModel):
    items: list[EventOut]
    next_cursor: str | None = Field(
        description="Pass as ?cursor= for the next (older) page; null on the last page."
    )


class SubscriptionPut(Request):
    """Subscribe ``job`` or ``workflow`` (exactly one) to the event ``event``; ``filter``
    maps payload paths (dotted keys) to the values they must equal. Putting it again
    replaces the filter."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [{"event": "order.created", "job": "receipts", "filter": {"region": "eu"}}]
        },
    )

    event: Name
    job: Name | None = None
    workflow: Name | None = None
    filter: dict[str, JsonValue] = Field(default_factory=dict)


class EventSubscriptionOut(BaseModel):
    id: int
    namespace: str
    event: str
    job: str | None
    workflow: str | None
    filter: dict[str, Any]
    created_at: datetime

    @classmethod
    def of(cls, subscription: Subscription) -> EventSubscriptionOut:
        return cls(
            id=subscription.id,
            namespace=subscription.namespace,
            event=subscription.event_name,
            job=subscription.job_name,
            workflow=subscription.workflow,
            filter=subscription.filter,
            created_at=subscription.created_at,
        )


class EventSubscriptionList(BaseModel):
    items: list[EventSubscriptionOut]
