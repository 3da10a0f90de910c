"""The store port's webhook part: subscriptions and the outbox (ADR 0017).

A Protocol of its own beside :class:`rota.store.port.Store` so the webhook code asks
only for what it uses; :class:`rota.store.sql_store.SqlStore` implements both.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from rota.domain.webhooks import (
    ClaimedDelivery,
    Delivery,
    DeliveryResult,
    Subscription,
    SubscriptionSpec,
)


class WebhookStore(Protocol):
    async def create_subscription(
        self, spec: SubscriptionSpec, secret: str, now: datetime | None
    ) -> Subscription: ...

    async def get_subscription(self, subscription_id: int) -> Subscription: ...

    async def list_subscriptions(self, namespaces: Sequence[str] | None) -> list[Subscription]: ...

    async def update_subscription(
        self, subscription_id: int, spec: SubscriptionSpec, enabled: bool, now: datetime | None
    ) -> Subscription: ...

    async def rotate_subscription_secret(
        self, subscription_id: int, secret: str, grace_seconds: float, now: datetime | None
    ) -> Subscription: ...

    async def delete_subscription(self, subscription_id: int) -> None: ...

    async def list_deliveries(
        self, subscription_id: int, before_id: int | None, limit: int
    ) -> list[Delivery]: ...

    async def get_delivery(self, delivery_id: int) -> Delivery: ...

    async def redeliver(self, delivery_id: int, now: datetime | None) -> Delivery: ...

    async def prune_deliveries(
        self, older_than: datetime, limit: int, leader_term: int | None = None
    ) -> int: ...

    async def claim_deliveries(
        self, limit: int, lease_seconds: float, now: datetime | None
    ) -> list[ClaimedDelivery]: ...

    async def record_deliveries(
        self, results: Sequence[DeliveryResult], disable_after: int, now: datetime | None
    ) -> set[int]: ...
