"""Events: named facts published to rota, and the jobs that subscribe to them.

Pure values and rules. An event is (namespace, name, id, payload); the same
(namespace, name, id) published again is the same event, so a producer that retries a
publish never triggers twice. A subscription ties a job to an event name with an
optional filter; each matching subscription gets exactly one run per event (its
idempotency key names the subscription and the event id, see :func:`event_run`).

The filter language is deliberately small: a JSON object whose keys are top-level or
dotted paths into the payload (``"customer.tier"``) and whose values must be equal to
what the payload holds there (JSON equality: ``1`` equals ``1.0``, ``true`` is not
``1``). Every key must match; ``{}`` matches every event. A path into something that
is not an object, or a missing key, does not match.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from rota.domain.jobs import Job, manual_run
from rota.domain.runs import NewRun, check_name
from rota.domain.values import check_json_text, check_text, encode_json
from rota.domain.workflows import StoredWorkflow, WorkflowDefinition, WorkflowInvalid
from rota.errors import InvalidArgument

# The step runs of a saved workflow for a payload in a namespace (rota.services.workflows.starting:
# the publishing process's handler registry gives each step its defaults).
StepRuns = Callable[[WorkflowDefinition, Any, str], list[NewRun]]


@dataclass(frozen=True)
class WorkflowStarts:
    """What a publish needs to start its subscribed workflows inside its transaction:
    ``steps`` makes a workflow's step runs, and ``payloads`` holds each subscribed
    workflow's payload, already checked against its parameters, by (name, version).
    The check ran before the transaction opened (rota.services.events.checked_starts): a JSON
    Schema check never holds a transaction, nor the event loop (issue 31)."""

    steps: StepRuns
    payloads: Mapping[tuple[str, int], Any] = field(default_factory=dict)

    def payload_for(self, stored: StoredWorkflow, values: Any) -> Any:
        """The payload ``stored`` starts with for the event's ``values``."""
        if stored.definition.parameters is None:
            return values  # nothing to check
        key = (stored.name, stored.version)
        if key not in self.payloads:
            # Saved or changed between the check and the transaction: never checked here.
            raise WorkflowInvalid(
                "workflow",
                stored.name,
                "a workflow that did not change while the event was published; "
                "publish it again (the same event id is safe)",
            )
        return self.payloads[key]


MAX_EVENT_PAYLOAD_BYTES = 65_536  # the encoded JSON, in UTF-8 bytes
MAX_EVENT_ID = 200  # leaves room in a run's 255-character idempotency key
MAX_FILTER_KEYS = 20
MAX_FILTER_PATH = 200
EVENT_ID_RULE = f"a string of 1-{MAX_EVENT_ID} characters"


def check_event_id(value: object) -> str:
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_EVENT_ID:
        raise InvalidArgument("event id", value, EVENT_ID_RULE)
    return check_text("event id", value)


@dataclass(frozen=True)
class NewEvent:
    """An event to publish; validated on construction, so nothing bad reaches a store."""

    name: str
    event_id: str
    payload_json: str = "null"
    namespace: str = "default"

    def __post_init__(self) -> None:
        check_name("event name", self.name)
        check_event_id(self.event_id)
        check_name("namespace", self.namespace)
        check_json_text("payload", self.payload_json)
        size = len(self.payload_json.encode())
        if size > MAX_EVENT_PAYLOAD_BYTES:
            raise InvalidArgument(
                "payload size", size, f"at most {MAX_EVENT_PAYLOAD_BYTES} bytes of JSON"
            )


@dataclass(frozen=True)
class Event:
    """A stored event. ``runs_created``: how many subscribed runs its publish made."""

    id: int
    namespace: str
    name: str
    event_id: str
    payload: Any
    published_at: datetime
    runs_created: int


@dataclass(frozen=True)
class Published:
    """What a publish did: the event as stored, whether this call stored it (False: the
    same event was published before, and nothing new was created), the jobs' runs and
    the workflow runs it started."""

    event: Event
    created: bool
    run_ids: tuple[int, ...]
    workflow_run_ids: tuple[int, ...] = ()


def check_filter(value: object) -> dict[str, Any]:
    """A filter as documented in this module; refused with the key at fault."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidArgument("filter", value, "an object of payload paths to values")
    if len(value) > MAX_FILTER_KEYS:
        raise InvalidArgument("filter", len(value), f"at most {MAX_FILTER_KEYS} keys")
    for path in value:
        if (
            not isinstance(path, str)
            or not 1 <= len(path) <= MAX_FILTER_PATH
            or "" in path.split(".")
        ):
            raise InvalidArgument(
                "filter key",
                path,
                f"a payload path of 1-{MAX_FILTER_PATH} characters: keys joined by '.'",
            )
    encode_json("filter", value)  # storable, and JSON values only
    return dict(value)


_MISSING = object()


def _at(payload: Any, path: str) -> Any:
    value = payload
    for key in path.split("."):
        if not isinstance(value, dict) or key not in value:
            return _MISSING
        value = value[key]
    return value


def _equal(a: Any, b: Any) -> bool:
    """JSON equality: ``1`` equals ``1.0``, but ``true`` is not ``1`` (as Python says)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and bool(a == b)


def matches(event_filter: dict[str, Any], payload: Any) -> bool:
    """Whether ``payload`` holds every (path, value) of ``event_filter``."""
    for path, expected in event_filter.items():
        found = _at(payload, path)
        if found is _MISSING or not _equal(found, expected):
            return False
    return True


@dataclass(frozen=True)
class Subscription:
    """A job (in its namespace) or a workflow subscribed to an event name: exactly one
    of ``job_name`` and ``workflow`` is set."""

    id: int
    namespace: str
    event_name: str
    job_name: str | None
    workflow: str | None
    filter: dict[str, Any]
    created_at: datetime


def event_key(subscription_id: int, event_id: str) -> str:
    """The run's idempotency key: one run per (subscription, event id), whichever
    transaction or retry inserts it."""
    return f"rota:event:{subscription_id}:{event_id}"


def event_run(job: Job, subscription_id: int, event: NewEvent) -> NewRun:
    """The run a published event makes for a subscribed job: the job's manual run with
    the event's payload (as a trigger with a payload replaces the job's, so a typed
    handler reads it as its own type), keyed by (subscription, event id), and the
    event's id as its correlation id, so logs and the run say which event caused it."""
    key = event_key(subscription_id, event.event_id)
    return manual_run(job, event.payload_json, key, correlation_id=event.event_id)
