"""Use cases for webhook subscriptions, shared by the API and the CLI.

A secret is generated here, returned once (at creation and at rotation) and never
again: listings and problems show a subscription without it, and nothing logs it.
A caller sees and changes only subscriptions in namespaces it reaches; another
namespace's subscription is "not found".
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from rota.clock import Clock
from rota.config import Settings
from rota.domain.access import Principal
from rota.domain.webhooks import (
    SECRET_BYTES,
    Delivery,
    DeliveryNotFound,
    Subscription,
    SubscriptionNotFound,
    SubscriptionSpec,
    new_secret,
)
from rota.errors import InvalidArgument
from rota.services.webhook_targets import pin
from rota.store.webhook_port import WebhookStore

# How long a rotated-out secret keeps signing beside the new one, so receivers can
# switch without dropping a delivery.
ROTATION_GRACE_SECONDS = 24 * 3600.0


@dataclass(frozen=True)
class WithSecret:
    """A subscription and its new secret: the only time the secret is shown."""

    subscription: Subscription
    secret: str


class Webhooks:
    def __init__(self, store: WebhookStore, settings: Settings, clock: Clock) -> None:
        self.store = store
        self.settings = settings
        self.clock = clock

    async def _check(self, principal: Principal, spec: SubscriptionSpec) -> None:
        if not principal.can_see(spec.namespace):
            raise InvalidArgument("namespace", spec.namespace, "a namespace you can reach")
        await pin(spec.url, self.settings.webhook_allow_private_addresses)

    async def _visible(self, principal: Principal, subscription_id: int) -> Subscription:
        subscription = await self.store.get_subscription(subscription_id)
        if not principal.can_see(subscription.namespace):
            raise SubscriptionNotFound(subscription_id)
        return subscription

    async def create(self, principal: Principal, spec: SubscriptionSpec) -> WithSecret:
        await self._check(principal, spec)
        secret = new_secret(secrets.token_bytes(SECRET_BYTES))
        made = await self.store.create_subscription(spec, secret, self.clock.db_now())
        return WithSecret(made, secret)

    async def visible(self, principal: Principal) -> list[Subscription]:
        reach = None if principal.namespaces is None else sorted(principal.namespaces)
        return await self.store.list_subscriptions(reach)

    async def get(self, principal: Principal, subscription_id: int) -> Subscription:
        return await self._visible(principal, subscription_id)

    async def update(
        self, principal: Principal, subscription_id: int, spec: SubscriptionSpec, enabled: bool
    ) -> Subscription:
        await self._visible(principal, subscription_id)
        await self._check(principal, spec)
        return await self.store.update_subscription(
            subscription_id, spec, enabled, self.clock.db_now()
        )

    async def rotate_secret(self, principal: Principal, subscription_id: int) -> WithSecret:
        await self._visible(principal, subscription_id)
        secret = new_secret(secrets.token_bytes(SECRET_BYTES))
        rotated = await self.store.rotate_subscription_secret(
            subscription_id, secret, ROTATION_GRACE_SECONDS, self.clock.db_now()
        )
        return WithSecret(rotated, secret)

    async def delete(self, principal: Principal, subscription_id: int) -> None:
        await self._visible(principal, subscription_id)
        await self.store.delete_subscription(subscription_id)

    async def deliveries(
        self, principal: Principal, subscription_id: int, before_id: int | None, limit: int
    ) -> list[Delivery]:
        await self._visible(principal, subscription_id)
        return await self.store.list_deliveries(subscription_id, before_id, limit)

    async def redeliver(self, principal: Principal, delivery_id: int) -> Delivery:
        """Send a delivery again, under the same webhook-id, with a fresh set of tries."""
        delivery = await self.store.get_delivery(delivery_id)
        subscription = await self.store.get_subscription(delivery.subscription_id)
        if not principal.can_see(subscription.namespace):
            raise DeliveryNotFound(delivery_id)
        return await self.store.redeliver(delivery_id, self.clock.db_now())
