"""Request and response bodies of the webhook routes. No response carries a secret
except the two that create one (creation and rotation), once."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, Field

from rota.api.schemas.fields import Name, Request
from rota.domain.webhooks import MAX_URL_LENGTH, Delivery, EventType, Subscription

Url = Annotated[
    str, Field(min_length=1, max_length=MAX_URL_LENGTH, examples=["https://example.com/hooks"])
]
EventTypes = Annotated[list[EventType], Field(min_length=1, max_length=len(EventType))]


class SubscriptionCreate(Request):
    url: Url
    event_types: EventTypes
    namespace: Name = "default"
    handler: Name | None = Field(default=None, description="Only runs of this handler.")
    queue: Name | None = Field(default=None, description="Only runs on this queue.")


class SubscriptionUpdate(Request):
    """Fields left out keep their value; ``enabled: true`` re-enables a subscription
    that was disabled after failing (and clears its failure count)."""

    url: Url | None = None
    event_types: EventTypes | None = None
    handler: Name | None = None
    queue: Name | None = None
    enabled: bool | None = None


class SubscriptionOut(BaseModel):
    id: int
    namespace: str
    url: str
    event_types: list[EventType]
    handler: str | None
    queue: str | None
    enabled: bool
    disabled_reason: str | None = Field(description="Why it was disabled, while it is.")
    disabled_at: datetime | None
    consecutive_failures: int
    rotating: bool = Field(description="A previous secret still signs beside the current one.")
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, subscription: Subscription) -> SubscriptionOut:
        return cls.model_validate(subscription, from_attributes=True)


class SubscriptionWithSecret(SubscriptionOut):
    secret: str = Field(description="The signing secret ('whsec_...'). Shown only now.")


class SubscriptionList(BaseModel):
    items: list[SubscriptionOut]


class DeliveryOut(BaseModel):
    id: int
    webhook_id: str = Field(description="The webhook-id header: the same on every try.")
    subscription_id: int
    event_type: EventType
    run_id: int
    state: str = Field(description="pending, delivered or abandoned")
    tries: int
    next_attempt_at: datetime
    last_status: int | None
    last_error: str | None
    occurred_at: datetime
    delivered_at: datetime | None

    @classmethod
    def of(cls, delivery: Delivery) -> DeliveryOut:
        return cls(
            id=delivery.id,
            webhook_id=delivery.message_id,
            subscription_id=delivery.subscription_id,
            event_type=delivery.event_type,
            run_id=delivery.run_id,
            state=delivery.state.value,
            tries=delivery.tries,
            next_attempt_at=delivery.next_attempt_at,
            last_status=delivery.last_status,
            last_error=delivery.last_error,
            occurred_at=delivery.occurred_at,
            delivered_at=delivery.delivered_at,
        )


class DeliveryPage(BaseModel):
    items: list[DeliveryOut]
    next_cursor: str | None
