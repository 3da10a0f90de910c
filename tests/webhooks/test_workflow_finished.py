"""workflow.finished to a local receiver: one signed event per finished workflow run,
its data the workflow run's id, name, state and duration, no step payloads (both
stores)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from rota.clock import FakeClock
from rota.domain.runs import NewRun, Outcome
from rota.domain.states import AttemptOutcome, RunState
from rota.domain.webhooks import EventType, SubscriptionSpec
from rota.domain.workflows import StepKind, StepSpec, WorkflowDefinition
from rota.engine.webhook_delivery import Deliverer
from rota.services.webhooks import Webhooks
from rota.store.port import ClaimRequest, Store
from rota.store.sql_store import SqlStore

from .receiver import receiving
from .support import ADMIN, local_settings

T0 = datetime(2030, 1, 1, 12, tzinfo=UTC)
SECRET_PAYLOAD = {"token": "never-in-an-event"}


async def drain_steps(store: Store, now: datetime) -> None:
    """Claim and succeed every claimable step until none is left (each map item
    returns the workflow payload's secret, which no event may carry)."""
    while claimed := await store.claim(ClaimRequest("w", ("default",), 10, 30.0), now):
        outcomes = [
            Outcome(
                c.run_id,
                c.fence,
                RunState.SUCCEEDED,
                AttemptOutcome.SUCCEEDED,
                "[1, 2, 3]" if c.handler == "list" else json.dumps(SECRET_PAYLOAD),
                workflow_step=True,
            )
            for c in claimed
        ]
        await store.complete(outcomes, now)


async def test_a_finished_workflow_run_arrives_once_signed(store: Store, db_url: str) -> None:
    assert isinstance(store, SqlStore)
    clock = FakeClock(T0)
    settings = local_settings(db_url)
    steps = (
        StepSpec("list", "list"),
        StepSpec("each", "item", kind=StepKind.MAP, over="list"),
        StepSpec("report", "report", after=("each",)),
    )
    definition = WorkflowDefinition("nightly", steps)
    with receiving() as receiver:
        spec = SubscriptionSpec("default", receiver.url, (EventType.WORKFLOW_FINISHED,))
        made = await Webhooks(store, settings, clock).create(ADMIN, spec)
        runs = [NewRun(handler=s.handler, payload_json="{}") for s in steps]
        payload = json.dumps(SECRET_PAYLOAD)
        workflow_run_id = await store.start_workflow_run(definition, payload, runs, T0)
        await drain_steps(store, T0 + timedelta(seconds=2))
        assert (await store.workflow_run(workflow_run_id)).state.value == "succeeded"
        clock.advance(seconds=2)  # the event is due when the workflow run ended
        deliverer = Deliverer(store, settings, clock)
        try:
            assert await deliverer.drain() == 1
            assert await deliverer.drain() == 0
        finally:
            await deliverer.close()
    [request] = receiver.received
    assert receiver.all_signed_by(made.secret)
    body = json.loads(request.body)
    assert body["type"] == "workflow.finished"
    assert body["data"] == {
        "id": workflow_run_id,
        "name": "nightly",
        "state": "succeeded",
        "duration_seconds": 2.0,
    }
    assert "never-in-an-event" not in request.body.decode()
