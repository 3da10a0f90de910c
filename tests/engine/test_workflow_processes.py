"""A workflow on real worker processes: SIGKILL the worker running a step, and every
step still ends with one recorded outcome and the workflow finishes."""

from __future__ import annotations

import signal
from collections import Counter
from pathlib import Path

import pytest

import rota
from rota.domain.states import AttemptOutcome, RunState
from rota.domain.workflows import WorkflowState
from tests.helpers import WorkerProcesses, read_marks, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def test_sigkill_mid_step_loses_no_step_and_the_workflow_finishes(
    process_app: rota.App, worker_processes: WorkerProcesses, marks: Path
):
    flow = rota.Workflow("killed")
    start = flow.step("start", handler="record")
    hang = flow.step("hang", handler="slow", after=[start])
    side = flow.step("side", handler="record", after=[start])
    flow.step("end", handler="record", after=[hang, side])
    process_app.workflow(flow)

    w1 = worker_processes.start("w1", lease_seconds=2.0)
    workflow_run_id = process_app.start_workflow("killed", {"seconds": 3600, "first_only": True})
    wait_until(
        lambda: any(m[2:] == ["w1", "started"] for m in read_marks(marks)),
        what="w1 to start the slow step",
    )
    # The kill must land in the slow step only: a record step whose handler ran but
    # whose completion (batched) was not yet committed would rightly run again on w2.
    wait_until(
        lambda: any(
            step.name == "side" and step.state is RunState.SUCCEEDED
            for step in process_app.workflow_run(workflow_run_id).steps
        ),
        what="the side step to be recorded",
    )
    worker_processes.start("w2", lease_seconds=2.0)
    w1.send_signal(signal.SIGKILL)
    view = wait_until(
        lambda: (
            (v := process_app.workflow_run(workflow_run_id)).state is not WorkflowState.RUNNING
            and v
        ),
        timeout=60,
        what="the workflow to finish",
    )
    worker_processes.stop_all()

    assert view.state is WorkflowState.SUCCEEDED
    assert {step.name: step.state for step in view.steps} == dict.fromkeys(
        ("start", "hang", "side", "end"), RunState.SUCCEEDED
    )
    executed = Counter(int(m[0]) for m in read_marks(marks) if m[-1] == "executed")
    record_steps = [step.run_id for step in view.steps if step.name != "hang"]
    assert executed == Counter(record_steps), "each record step executed exactly once"
    for step in view.steps:
        outcomes = [a.outcome for a in process_app.run_detail(step.run_id or 0).attempts]
        expected = [AttemptOutcome.SUCCEEDED]
        if step.name == "hang":
            expected = [AttemptOutcome.LOST, AttemptOutcome.SUCCEEDED]
        assert outcomes == expected, step.name


def test_sigkill_mid_release_loses_no_step_and_the_workflow_finishes(
    process_app: rota.App, worker_processes: WorkerProcesses, marks: Path
):
    """w1 kills itself inside the transaction that completes ``start`` and releases
    ``side``: after the fenced write and the release, before the commit. Nothing of
    it stays; w2 takes ``start`` over when its lease ends, and every step ends once."""
    flow = rota.Workflow("killed-in-release")
    start = flow.step("start", handler="record")
    side = flow.step("side", handler="record", after=[start])
    flow.step("end", handler="record", after=[side])
    process_app.workflow(flow)

    w1 = worker_processes.start(
        "w1", lease_seconds=2.0, extra_env={"ROTA_TEST_KILL_IN_RELEASE": "w1"}
    )
    workflow_run_id = process_app.start_workflow("killed-in-release", {"n": 1})
    assert w1.wait(timeout=60) == -signal.SIGKILL
    [died] = [m for m in read_marks(marks) if m[-1] == "dying-in-release"]
    start_run = process_app.workflow_run(workflow_run_id).steps[0].run_id
    assert died[:-1] == [str(start_run)], "it died releasing start's children"
    view = process_app.workflow_run(workflow_run_id)
    assert {step.name: step.state for step in view.steps}["side"] is RunState.WAITING

    worker_processes.start("w2", lease_seconds=2.0)
    view = wait_until(
        lambda: (
            (v := process_app.workflow_run(workflow_run_id)).state is not WorkflowState.RUNNING
            and v
        ),
        timeout=60,
        what="the workflow to finish",
    )
    worker_processes.stop_all()

    assert view.state is WorkflowState.SUCCEEDED
    assert {step.name: step.state for step in view.steps} == dict.fromkeys(
        ("start", "side", "end"), RunState.SUCCEEDED
    )
    executed = Counter((int(m[0]), m[2]) for m in read_marks(marks) if m[-1] == "executed")
    side_run, end_run = (step.run_id for step in view.steps[1:])
    assert executed == Counter(
        {(start_run, "w1"): 1, (start_run, "w2"): 1, (side_run, "w2"): 1, (end_run, "w2"): 1}
    ), "start ran again after the kill; the steps it would have released ran once"
    for step in view.steps:
        outcomes = [a.outcome for a in process_app.run_detail(step.run_id or 0).attempts]
        expected = [AttemptOutcome.SUCCEEDED]
        if step.name == "start":
            expected = [AttemptOutcome.LOST, AttemptOutcome.SUCCEEDED]
        assert outcomes == expected, step.name
