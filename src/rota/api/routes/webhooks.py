"""Webhook subscriptions, their delivery history and manual redelivery (jobs:admin).

The secret is in the body of two responses only (creation, rotation); the audit log
records the subscription's id, never the body.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request, Response

from rota.api import pagination
from rota.api.auth import Admin
from rota.api.context import Context, StoreDep, audit_target
from rota.api.problems import AUTHENTICATED, responses
from rota.api.schemas.webhooks import (
    DeliveryOut,
    DeliveryPage,
    SubscriptionCreate,
    SubscriptionList,
    SubscriptionOut,
    SubscriptionUpdate,
    SubscriptionWithSecret,
)
from rota.domain.values import MAX_ID
from rota.domain.webhooks import SubscriptionSpec
from rota.services.webhooks import Webhooks, WithSecret
from rota.store.port import Store

router = APIRouter(prefix="/api/v1/webhooks", tags=["webhooks"])
Id = Annotated[int, Path(ge=1, le=MAX_ID)]
CURSOR = "deliveries"


def _webhooks(context: Context, store: Store) -> Webhooks:
    # The one SqlStore implements the webhook port beside the store port.
    hooks = store.webhooks
    return Webhooks(hooks, context.rota_app.settings, context.clock)


def _with_secret(made: WithSecret) -> SubscriptionWithSecret:
    out = SubscriptionOut.of(made.subscription).model_dump()
    return SubscriptionWithSecret(**out, secret=made.secret)


@router.get("", responses=responses(*AUTHENTICATED))
async def list_subscriptions(
    principal: Admin, context: Context, store: StoreDep
) -> SubscriptionList:
    """Subscriptions in namespaces the caller reaches (never their secrets)."""
    found = await _webhooks(context, store).visible(principal)
    return SubscriptionList(items=[SubscriptionOut.of(s) for s in found])


@router.post("", status_code=201, responses=responses(*AUTHENTICATED, 400))
async def create_subscription(
    request: Request, principal: Admin, context: Context, store: StoreDep, body: SubscriptionCreate
) -> SubscriptionWithSecret:
    """Subscribe a URL to run events. The response holds the signing secret, shown this
    once. A URL whose host resolves to a loopback, link-local or private address is
    refused (422) unless the operator allows them."""
    audit_target(request, "webhook subscription", body.namespace)
    spec = SubscriptionSpec(
        body.namespace, body.url, tuple(body.event_types), body.handler, body.queue
    )
    made = await _webhooks(context, store).create(principal, spec)
    audit_target(request, f"webhook subscription {made.subscription.id}", body.namespace)
    return _with_secret(made)


@router.get("/{subscription_id}", responses=responses(*AUTHENTICATED, 404))
async def get_subscription(
    subscription_id: Id, principal: Admin, context: Context, store: StoreDep
) -> SubscriptionOut:
    """One subscription, with why it is disabled if it is (never its secret)."""
    return SubscriptionOut.of(await _webhooks(context, store).get(principal, subscription_id))


@router.patch("/{subscription_id}", responses=responses(*AUTHENTICATED, 400, 404))
async def update_subscription(
    request: Request,
    subscription_id: Id,
    principal: Admin,
    context: Context,
    store: StoreDep,
    body: SubscriptionUpdate,
) -> SubscriptionOut:
    """Change what a subscription receives, or enable or disable it."""
    audit_target(request, f"webhook subscription {subscription_id}")
    webhooks = _webhooks(context, store)
    current = await webhooks.get(principal, subscription_id)
    changed = body.model_dump(exclude_unset=True)
    spec = SubscriptionSpec(
        current.namespace,
        changed.get("url") or current.url,
        tuple(changed.get("event_types") or current.event_types),
        changed.get("handler", current.handler),
        changed.get("queue", current.queue),
    )
    enabled = current.enabled if body.enabled is None else body.enabled
    updated = await webhooks.update(principal, subscription_id, spec, enabled)
    return SubscriptionOut.of(updated)


@router.delete("/{subscription_id}", status_code=204, responses=responses(*AUTHENTICATED, 404))
async def delete_subscription(
    request: Request, subscription_id: Id, principal: Admin, context: Context, store: StoreDep
) -> Response:
    """Delete a subscription and its delivery history."""
    audit_target(request, f"webhook subscription {subscription_id}")
    await _webhooks(context, store).delete(principal, subscription_id)
    return Response(status_code=204)


@router.post("/{subscription_id}/rotate-secret", responses=responses(*AUTHENTICATED, 404))
async def rotate_secret(
    request: Request, subscription_id: Id, principal: Admin, context: Context, store: StoreDep
) -> SubscriptionWithSecret:
    """A new signing secret, shown this once; the previous one keeps signing beside it
    for 24 hours so receivers can switch without a missed delivery."""
    audit_target(request, f"webhook subscription {subscription_id} secret")
    return _with_secret(await _webhooks(context, store).rotate_secret(principal, subscription_id))


@router.get("/{subscription_id}/deliveries", responses=responses(*AUTHENTICATED, 400, 404))
async def list_deliveries(
    subscription_id: Id,
    principal: Admin,
    context: Context,
    store: StoreDep,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
) -> DeliveryPage:
    """The subscription's delivery history, newest first."""
    deliveries = await _webhooks(context, store).deliveries(
        principal, subscription_id, pagination.decode(CURSOR, cursor), limit
    )
    return DeliveryPage(
        items=[DeliveryOut.of(d) for d in deliveries],
        next_cursor=pagination.next_cursor(CURSOR, [d.id for d in deliveries], limit),
    )


@router.post(
    "/deliveries/{delivery_id}/redeliver",
    status_code=202,
    responses=responses(*AUTHENTICATED, 404),
)
async def redeliver(
    request: Request, delivery_id: Id, principal: Admin, context: Context, store: StoreDep
) -> DeliveryOut:
    """Send a delivery again, under the same webhook-id, with a fresh set of tries."""
    audit_target(request, f"webhook delivery {delivery_id}")
    return DeliveryOut.of(await _webhooks(context, store).redeliver(principal, delivery_id))
