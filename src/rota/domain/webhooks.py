"""Webhooks: subscriptions, deliveries, the Standard Webhooks signature and the retry
schedule. Pure values and rules; the store keeps subscriptions and the outbox,
rota.webhooks delivers (docs/adr/0017-webhooks-outbox.md).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from rota.domain.breakers import BreakerState
from rota.domain.runs import check_name
from rota.errors import InvalidArgument, RotaError


class EventType(StrEnum):
    # A run's events: one per move into the state named (EVENT_OF_RUN_STATE), data the
    # run's columns (Delivery.body), never its payload or result.
    RUN_SUCCEEDED = "run.succeeded"
    RUN_FAILED = "run.failed"  # failed permanently (and see BROADER_EVENT)
    RUN_DEAD_LETTERED = "run.dead_lettered"
    RUN_CANCELLED = "run.cancelled"  # by request, a workflow's cancel or a missed deadline
    RUN_RETRYING = "run.retrying"  # an attempt failed or timed out and another is due
    RUN_TIMED_OUT = "run.timed_out"  # its last attempt ran out of time
    RUN_SKIPPED = "run.skipped"  # an overlap policy or a workflow's trigger rule left it out
    # Once per finish of a workflow run, written by the transaction that made its
    # derived state final (store/core/workflows.py); data: id, name, state, duration.
    WORKFLOW_FINISHED = "workflow.finished"
    # A circuit breaker opened (or reopened after a failed probe); written with the
    # transition, naming the run whose outcome opened it.
    BREAKER_OPENED = "breaker.opened"
    # A circuit breaker that was open or half-open closed: a probe (or a straggler run)
    # succeeded, or an operator reset it; written with the transition.
    BREAKER_CLOSED = "breaker.closed"


# The run states that cause an event. The completion and reap SQL (sql/*/leases.sql)
# spell the same mapping as a CASE; the statements that can write one state only
# (a cancel, a skip, ...) name its event as literals. tests/contract/test_store_webhooks.py
# holds every copy to this table.
EVENT_OF_RUN_STATE: dict[str, EventType] = {
    "succeeded": EventType.RUN_SUCCEEDED,
    "failed": EventType.RUN_FAILED,
    "timed_out": EventType.RUN_TIMED_OUT,
    "dead_lettered": EventType.RUN_DEAD_LETTERED,
    "cancelled": EventType.RUN_CANCELLED,
    "retrying": EventType.RUN_RETRYING,
    "skipped": EventType.RUN_SKIPPED,
}
# An event that narrows an older one: a subscription that names the broader type but
# not the narrower one gets the event under the broader type, as it did before the
# narrower one existed (a timed-out run was a run.failed until run.timed_out came).
# A subscription naming both gets it once, under its own type. Spelled in the same SQL
# as the CASE (complete, reap), held to this table by the same tests.
BROADER_EVENT: dict[EventType, EventType] = {EventType.RUN_TIMED_OUT: EventType.RUN_FAILED}


def delivered_as(event: EventType, subscribed: Iterable[EventType]) -> EventType | None:
    """The type a subscription to ``subscribed`` receives ``event`` as (None: not at all)."""
    wanted = set(subscribed)
    if event in wanted:
        return event
    broader = BROADER_EVENT.get(event)
    return broader if broader in wanted else None


# The breaker transitions that cause an event: every opening (from closed, or a
# failed probe reopening it) and every close of a breaker that was not closed. The
# claim's move to half-open and a reset of a closed breaker cause none.
EVENT_OF_BREAKER_MOVE: dict[tuple[BreakerState, BreakerState], EventType] = {
    (BreakerState.CLOSED, BreakerState.OPEN): EventType.BREAKER_OPENED,
    (BreakerState.HALF_OPEN, BreakerState.OPEN): EventType.BREAKER_OPENED,
    (BreakerState.OPEN, BreakerState.CLOSED): EventType.BREAKER_CLOSED,
    (BreakerState.HALF_OPEN, BreakerState.CLOSED): EventType.BREAKER_CLOSED,
}
SECRET_PREFIX = "whsec_"  # noqa: S105 - the Standard Webhooks prefix, not a secret
SECRET_BYTES = 32
MAX_URL_LENGTH = 2048
EVENT_TYPES_RULE = "one or more of " + ", ".join(e.value for e in EventType)


class DeliveryState(StrEnum):
    PENDING = "pending"  # due at next_attempt_at (or leased by a deliverer)
    DELIVERED = "delivered"  # the receiver answered 2xx
    ABANDONED = "abandoned"  # retries spent, or its subscription was disabled


class SubscriptionNotFound(RotaError, LookupError):
    def __init__(self, subscription_id: int) -> None:
        self.subscription_id = subscription_id
        super().__init__(f"webhook subscription {subscription_id} does not exist")


class DeliveryNotFound(RotaError, LookupError):
    def __init__(self, delivery_id: int) -> None:
        self.delivery_id = delivery_id
        super().__init__(f"webhook delivery {delivery_id} does not exist")


def check_event_types(values: object) -> tuple[EventType, ...]:
    """A non-empty list of known event types, without repeats, in a stable order."""
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise InvalidArgument("event_types", values, EVENT_TYPES_RULE)
    found: set[EventType] = set()
    for value in values:
        try:
            found.add(EventType(value))
        except ValueError:
            raise InvalidArgument("event_types", value, EVENT_TYPES_RULE) from None
    if not found:
        raise InvalidArgument("event_types", [], EVENT_TYPES_RULE)
    return tuple(sorted(found))


def encode_event_types(types: Iterable[EventType]) -> str:
    """As stored: ',a,b,' so one LIKE '%,type,%' matches in both dialects."""
    return "," + ",".join(types) + ","


def decode_event_types(stored: str) -> tuple[EventType, ...]:
    return tuple(EventType(part) for part in stored.strip(",").split(",") if part)


def new_secret(random_bytes: bytes) -> str:
    return SECRET_PREFIX + base64.b64encode(random_bytes).decode()


def sign(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """One signature, ``v1,<base64 HMAC-SHA256 of id.timestamp.body>``."""
    key = base64.b64decode(secret.removeprefix(SECRET_PREFIX))
    signed = f"{message_id}.{timestamp}.".encode() + body
    digest = hmac.new(key, signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def signature_header(secrets: Iterable[str], message_id: str, timestamp: int, body: bytes) -> str:
    """Every current secret signs (during a rotation, the new and the previous one),
    space-separated, so a receiver holding either verifies."""
    return " ".join(sign(secret, message_id, timestamp, body) for secret in secrets)


def verify(secret: str, headers: dict[str, str], body: bytes) -> bool:
    """What a receiver does (used by rota's own tests and the README example)."""
    expected = sign(secret, headers["webhook-id"], int(headers["webhook-timestamp"]), body)
    offered = headers["webhook-signature"].split(" ")
    return any(hmac.compare_digest(expected, sig) for sig in offered)


@dataclass(frozen=True)
class SubscriptionSpec:
    """What a caller asks for; checked on construction, so nothing invalid is written."""

    namespace: str
    url: str
    event_types: tuple[EventType, ...]
    handler: str | None = None
    queue: str | None = None

    def __post_init__(self) -> None:
        check_name("namespace", self.namespace)
        object.__setattr__(self, "event_types", check_event_types(self.event_types))
        if self.handler is not None:
            check_name("handler", self.handler)
        if self.queue is not None:
            check_name("queue", self.queue)


@dataclass(frozen=True)
class Subscription:
    id: int
    namespace: str
    url: str
    event_types: tuple[EventType, ...]
    handler: str | None
    queue: str | None
    enabled: bool
    disabled_reason: str | None
    disabled_at: datetime | None
    consecutive_failures: int
    created_at: datetime
    updated_at: datetime
    rotating: bool  # a previous secret still signs beside the current one


@dataclass(frozen=True)
class SigningKeys:
    """The secrets that sign a subscription's deliveries now (never logged)."""

    current: str
    previous: str | None

    def all(self) -> tuple[str, ...]:
        return (self.current,) if self.previous is None else (self.current, self.previous)


@dataclass(frozen=True)
class Delivery:
    id: int
    subscription_id: int
    event_type: EventType
    run_id: int
    namespace: str
    handler: str
    queue: str
    run_state: str
    attempt: int
    occurred_at: datetime
    state: DeliveryState
    tries: int
    next_attempt_at: datetime
    last_status: int | None
    last_error: str | None
    delivered_at: datetime | None
    # An event whose data are not just its run's columns (workflow.finished,
    # breaker.opened, breaker.closed) stores its own data document, written with the
    # event; None for run events, whose data are the run columns above.
    event_data: dict[str, Any] | None = None

    @property
    def message_id(self) -> str:
        """webhook-id: the same for every try and every redelivery of this event."""
        return f"msg_{self.id}"

    def body(self) -> bytes:
        """The JSON sent; built from stored columns only, so every try sends the same."""
        data = self.event_data
        if data is None:
            data = {
                "run_id": self.run_id,
                "namespace": self.namespace,
                "handler": self.handler,
                "queue": self.queue,
                "state": self.run_state,
                "attempt": self.attempt,
            }
        document: dict[str, Any] = {
            "type": self.event_type.value,
            "timestamp": self.occurred_at.isoformat(),
            "data": data,
        }
        return json.dumps(document, separators=(",", ":"), sort_keys=True).encode()


@dataclass(frozen=True)
class DeliveryPolicy:
    """When to try again, and when to give up on a subscription."""

    max_tries: int = 8  # per delivery, then it is abandoned
    disable_after: int = 20  # consecutive failed tries of a subscription
    first_retry_seconds: float = 5.0
    max_retry_seconds: float = 3600.0

    def __post_init__(self) -> None:
        for name in ("max_tries", "disable_after"):
            if getattr(self, name) < 1:
                raise InvalidArgument(name, getattr(self, name), "an integer >= 1")
        if not 0 < self.first_retry_seconds <= self.max_retry_seconds:
            raise InvalidArgument(
                "first_retry_seconds", self.first_retry_seconds, "> 0 and <= max_retry_seconds"
            )

    def retry_in(self, tries: int, draw: float) -> float | None:
        """Seconds until the next try after ``tries`` failed ones (None: give up).
        Exponential with "equal jitter": ``draw`` in [0, 1) picks between half and all
        of the step, so receivers that come back are not hit by every retry at once."""
        if tries >= self.max_tries:
            return None
        step = min(self.max_retry_seconds, self.first_retry_seconds * 2.0 ** (tries - 1))
        return step / 2 + step / 2 * draw


# -- what the outbox hands a deliverer, and what it hands back -------------------
@dataclass(frozen=True)
class ClaimedDelivery:
    """A delivery leased to one deliverer, with where it goes and what signs it."""

    delivery: Delivery
    url: str
    keys: SigningKeys


@dataclass(frozen=True)
class DeliveryResult:
    """What one try came to. ``retry_in`` None after a failure: give up on it."""

    delivery_id: int
    tries: int
    delivered: bool
    status: int | None
    error: str | None
    retry_in: float | None = None
