"""The one SQL store: webhook subscriptions and the outbox of deliveries.

Events enter the outbox inside the completion and reap statements (leases.sql); this
part keeps subscriptions and hands deliveries out under a lease per delivery.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from rota.domain.webhooks import (
    ClaimedDelivery,
    Delivery,
    DeliveryNotFound,
    DeliveryResult,
    DeliveryState,
    EventType,
    SigningKeys,
    Subscription,
    SubscriptionNotFound,
    SubscriptionSpec,
    decode_event_types,
    encode_event_types,
)
from rota.store.core.base import CoreBase
from rota.store.dialect import Row, Session


def subscription_from_row(row: Row) -> Subscription:
    return Subscription(
        id=row["id"],
        namespace=row["namespace"],
        url=row["url"],
        event_types=decode_event_types(row["event_types"]),
        handler=row["handler"],
        queue=row["queue"],
        enabled=bool(row["enabled"]),
        disabled_reason=row["disabled_reason"],
        disabled_at=row["disabled_at"],
        consecutive_failures=row["consecutive_failures"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        rotating=row["previous_secret"] is not None,
    )


def delivery_from_row(row: Row) -> Delivery:
    return Delivery(
        id=row["id"],
        subscription_id=row["subscription_id"],
        event_type=EventType(row["event_type"]),
        run_id=row["run_id"],
        namespace=row["namespace"],
        handler=row["handler"],
        queue=row["queue"],
        run_state=row["run_state"],
        attempt=row["attempt"],
        occurred_at=row["occurred_at"],
        state=DeliveryState(row["state"]),
        tries=row["tries"],
        next_attempt_at=row["next_attempt_at"],
        last_status=row["last_status"],
        last_error=row["last_error"],
        delivered_at=row["delivered_at"],
        event_data=row.get("event_data"),
    )


def _spec_params(spec: SubscriptionSpec) -> dict[str, object]:
    return {
        "namespace": spec.namespace,
        "url": spec.url,
        "event_types": encode_event_types(spec.event_types),
        "handler": spec.handler,
        "queue": spec.queue,
    }


class CoreWebhooks(CoreBase):
    async def create_subscription(
        self, spec: SubscriptionSpec, secret: str, now: datetime | None
    ) -> Subscription:
        [row] = await self._d.write(
            "insert_subscription", {**_spec_params(spec), "secret": secret}, now
        )
        return subscription_from_row(row)

    async def get_subscription(self, subscription_id: int) -> Subscription:
        rows = await self._d.rows("get_subscription", {"id": subscription_id})
        if not rows:
            raise SubscriptionNotFound(subscription_id)
        return subscription_from_row(rows[0])

    async def list_subscriptions(self, namespaces: Sequence[str] | None) -> list[Subscription]:
        params = {"namespaces": None if namespaces is None else list(namespaces)}
        return [subscription_from_row(r) for r in await self._d.rows("list_subscriptions", params)]

    async def update_subscription(
        self, subscription_id: int, spec: SubscriptionSpec, enabled: bool, now: datetime | None
    ) -> Subscription:
        params = {**_spec_params(spec), "id": subscription_id, "enabled": enabled}
        rows = await self._d.write("update_subscription", params, now)
        if not rows:
            raise SubscriptionNotFound(subscription_id)
        return subscription_from_row(rows[0])

    async def rotate_subscription_secret(
        self, subscription_id: int, secret: str, grace_seconds: float, now: datetime | None
    ) -> Subscription:
        params = {"id": subscription_id, "secret": secret, "grace_seconds": grace_seconds}
        rows = await self._d.write("rotate_secret", params, now)
        if not rows:
            raise SubscriptionNotFound(subscription_id)
        return subscription_from_row(rows[0])

    async def delete_subscription(self, subscription_id: int) -> None:
        if not await self._d.write("delete_subscription", {"id": subscription_id}):
            raise SubscriptionNotFound(subscription_id)

    async def list_deliveries(
        self, subscription_id: int, before_id: int | None, limit: int
    ) -> list[Delivery]:
        params = {"subscription_id": subscription_id, "before_id": before_id, "limit": limit}
        return [delivery_from_row(r) for r in await self._d.rows("list_deliveries", params)]

    async def get_delivery(self, delivery_id: int) -> Delivery:
        rows = await self._d.rows("get_delivery", {"id": delivery_id})
        if not rows:
            raise DeliveryNotFound(delivery_id)
        return delivery_from_row(rows[0])

    async def redeliver(self, delivery_id: int, now: datetime | None) -> Delivery:
        rows = await self._d.write("redeliver", {"id": delivery_id}, now)
        if not rows:
            raise DeliveryNotFound(delivery_id)
        return delivery_from_row(rows[0])

    async def prune_deliveries(
        self, older_than: datetime, limit: int, leader_term: int | None = None
    ) -> int:
        """Delivered and abandoned deliveries that occurred before ``older_than`` (a
        leader duty, fenced by its term like the pruning of runs)."""
        return await self._prune("prune_deliveries", older_than, limit, leader_term)

    # -- the deliverer (any node; a lease per delivery) ---------------------------
    async def claim_deliveries(
        self, limit: int, lease_seconds: float, now: datetime | None
    ) -> list[ClaimedDelivery]:
        if not await self._d.rows("delivery_due", {}, now):
            return []

        async def claim(session: Session) -> list[ClaimedDelivery]:
            params = {"limit": limit, "lease_seconds": lease_seconds}
            rows = await session.rows("claim_deliveries", params)
            deliveries = [delivery_from_row(row) for row in rows]
            if not deliveries:
                return []
            ids = sorted({d.subscription_id for d in deliveries})
            targets = {r["id"]: r for r in await session.rows("delivery_targets", {"ids": ids})}
            return [
                ClaimedDelivery(
                    d,
                    targets[d.subscription_id]["url"],
                    SigningKeys(
                        targets[d.subscription_id]["secret"],
                        targets[d.subscription_id]["previous_secret"],
                    ),
                )
                for d in sorted(deliveries, key=lambda d: d.id)
            ]

        return await self._d.in_transaction(now, claim)

    async def record_deliveries(
        self, results: Sequence[DeliveryResult], disable_after: int, now: datetime | None
    ) -> set[int]:
        """Write tries' results in one transaction, each fenced by its tries count; the
        ids written (one missing lost its lease: another deliverer took it over, or it
        was redelivered meanwhile)."""

        async def record(session: Session) -> set[int]:
            written: set[int] = set()
            for result in sorted(results, key=lambda r: r.delivery_id):
                if await _record_one(session, result, disable_after):
                    written.add(result.delivery_id)
            return written

        if not results:
            return set()
        return await self._d.in_transaction(now, record)


async def _record_one(session: Session, result: DeliveryResult, disable_after: int) -> bool:
    fence = {"id": result.delivery_id, "tries": result.tries, "status": result.status}
    if result.delivered:
        return bool(await session.rows("delivery_succeeded", fence))
    failure = {**fence, "error": result.error, "retry_in": result.retry_in}
    rows = await session.rows("delivery_failed", failure)
    if not rows:
        return False
    reason = f"{disable_after} consecutive failed deliveries; the last: {result.error}"
    failed = {"id": rows[0]["subscription_id"], "disable_after": disable_after}
    await session.rows("subscription_failed", {**failed, "reason": reason})
    return True
