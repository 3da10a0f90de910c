"""Delivering the webhook outbox: claim due deliveries under a lease, POST each signed
per Standard Webhooks, record what came of it (docs/adr/0017-webhooks-outbox.md).

Every node runs a deliverer: a lease per delivery (SKIP LOCKED on PostgreSQL, BEGIN
IMMEDIATE on SQLite) keeps two nodes off the same one, so delivery needs no leader and
goes on while the leader changes. A deliverer that dies mid-send leaves a lease that
ends; the delivery is then sent again under the same ``webhook-id`` (at least once).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable

import httpx
import structlog

from rota._version import __version__
from rota.clock import Clock
from rota.config import Settings
from rota.domain.webhooks import ClaimedDelivery, DeliveryPolicy, DeliveryResult, signature_header
from rota.errors import InvalidArgument
from rota.services.webhook_targets import pin
from rota.store.webhook_port import WebhookStore
from rota.supervise import Restarts, every

log = structlog.get_logger("rota.webhooks")
BATCH = 20
# What is read of a receiver's answer: enough for a status and a reused connection,
# never a receiver's whole (possibly endless) body.
MAX_RESPONSE_BYTES = 64 * 1024
MAX_ERROR_CHARS = 200


def policy_of(settings: Settings) -> DeliveryPolicy:
    return DeliveryPolicy(
        max_tries=settings.webhook_max_tries, disable_after=settings.webhook_disable_after
    )


def lease_seconds_of(settings: Settings) -> float:
    """A try ends within its timeout; the lease outlasts it with room for the write."""
    return settings.webhook_timeout_seconds * 2 + 1.0


class Deliverer:
    def __init__(
        self,
        store: WebhookStore,
        settings: Settings,
        clock: Clock,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        draw: Callable[[], float] = random.random,
    ) -> None:
        self.store = store
        self.settings = settings
        self.clock = clock
        self.policy = policy_of(settings)
        self.draw = draw
        # Redirects are never followed: a 3xx is a failed try (it could point inside).
        self.client = httpx.AsyncClient(
            transport=transport,
            follow_redirects=False,
            timeout=httpx.Timeout(settings.webhook_timeout_seconds),
            trust_env=False,
        )

    async def close(self) -> None:
        await self.client.aclose()

    async def run(self, stop: asyncio.Event, restarts: Restarts) -> None:
        """Deliver until ``stop`` is set; one turn drains what is due."""
        await every(
            "rota-webhooks",
            self.settings.poll_seconds,
            self.drain,
            restarts,
            keep_going=lambda: not stop.is_set(),
            first_now=True,
        )

    async def drain(self) -> int:
        sent = 0
        while (count := await self.deliver_once()) > 0:
            sent += count
        return sent

    async def deliver_once(self) -> int:
        """Claim up to a batch of due deliveries, send them at once; how many were sent."""
        claimed = await self.store.claim_deliveries(
            BATCH, lease_seconds_of(self.settings), self.clock.db_now()
        )
        results = await asyncio.gather(*(self.send(item) for item in claimed))
        recorded = await self.store.record_deliveries(
            results, self.policy.disable_after, self.clock.db_now()
        )
        for stale in sorted({r.delivery_id for r in results} - recorded):
            log.info("webhook result stale", delivery_id=stale)
        return len(claimed)

    async def send(self, claimed: ClaimedDelivery) -> DeliveryResult:
        delivery = claimed.delivery
        body = delivery.body()
        timestamp = int(self.clock.now().timestamp())
        headers = {
            "content-type": "application/json",
            "user-agent": f"rota-webhooks/{__version__}",
            "webhook-id": delivery.message_id,
            "webhook-timestamp": str(timestamp),
            "webhook-signature": signature_header(
                claimed.keys.all(), delivery.message_id, timestamp, body
            ),
        }
        try:
            async with asyncio.timeout(self.settings.webhook_timeout_seconds):
                status = await self._post(claimed.url, headers, body)
        except InvalidArgument as refused:  # the host now resolves to a refused address
            return self._failed(claimed, None, f"refused: expected {refused.allowed}")
        except (httpx.HTTPError, OSError, TimeoutError) as exc:
            return self._failed(claimed, None, _describe(exc))
        if 200 <= status < 300:
            return DeliveryResult(delivery.id, delivery.tries, True, status, None)
        if 300 <= status < 400:
            return self._failed(claimed, status, f"HTTP {status}: redirects are not followed")
        return self._failed(claimed, status, f"HTTP {status}")

    async def _post(self, url: str, headers: dict[str, str], body: bytes) -> int:
        target = await pin(url, self.settings.webhook_allow_private_addresses)
        request = self.client.build_request(
            "POST",
            target.url,
            headers={**headers, "host": target.host_header},
            content=body,
            extensions={"sni_hostname": target.server_name},
        )
        response = await self.client.send(request, stream=True)
        try:
            read = 0
            async for chunk in response.aiter_raw():
                read += len(chunk)
                if read >= MAX_RESPONSE_BYTES:
                    break
        finally:
            await response.aclose()
        return response.status_code

    def _failed(self, claimed: ClaimedDelivery, status: int | None, error: str) -> DeliveryResult:
        delivery = claimed.delivery
        retry_in = self.policy.retry_in(delivery.tries, self.draw())
        log.info(
            "webhook delivery failed",
            delivery_id=delivery.id,
            subscription_id=delivery.subscription_id,
            tries=delivery.tries,
            status=status,
            retry_in=retry_in,
        )
        return DeliveryResult(delivery.id, delivery.tries, False, status, error, retry_in)


def _describe(exc: BaseException) -> str:
    """A failed try in a line: the kind of error, and httpx's message (no headers)."""
    if isinstance(exc, TimeoutError | httpx.TimeoutException):
        return "timed out"
    text = str(exc).partition("\n")[0]
    return f"{type(exc).__name__}: {text}"[:MAX_ERROR_CHARS]


async def deliver_until(
    store: WebhookStore, settings: Settings, clock: Clock, stop: asyncio.Event, restarts: Restarts
) -> None:
    """A node's deliverer, for its whole life (rota.engine.node starts it on every node)."""
    deliverer = Deliverer(store, settings, clock)
    try:
        await deliverer.run(stop, restarts)
    finally:
        await deliverer.close()
