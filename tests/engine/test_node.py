"""One node assembly (rota.engine.node): a worker, a leader candidate, or both, whatever door
starts it (``App.work``, ``rota worker``, ``rota server``)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import rota
from rota.domain.states import RunState
from rota.engine.node import NodeRoles
from rota.engine.worker import WorkerOptions
from rota.errors import InvalidArgument
from tests.helpers import eventually
from tests.waiting import wait_for_state

pytestmark = pytest.mark.timeout(60)


async def _holder(app: rota.App) -> str | None:
    info = await (await app.store()).leader()
    return info.holder if info is not None else None


async def test_a_worker_node_works_runs_and_leads(make_app):
    app = make_app(leader_lease_seconds=0.6)

    @app.handler("noop")
    async def noop(ctx: rota.RunContext, payload: Any) -> None:
        return None

    stop = asyncio.Event()
    working = asyncio.create_task(app.work(stop, app.worker_options(node_id="both")))
    try:
        run_id = await app.enqueue_async("noop", {})
        await wait_for_state(await app.store(), run_id, RunState.SUCCEEDED)
        assert await eventually(lambda: _holder(app), what="the node to lead") == "both"
    finally:
        stop.set()
        worker = await asyncio.wait_for(working, 30)
    assert worker.claimed_total == 1
    # It left the election when it stopped: another node takes over at once.
    assert await (await app.store()).acquire_leadership("next", None, 10.0, None) == 2


async def test_a_leader_only_node_leads_and_works_no_runs(make_app):
    app = make_app(leader_lease_seconds=0.6)

    @app.handler("noop")
    async def noop(ctx: rota.RunContext, payload: Any) -> None:
        return None

    node = await app.node(NodeRoles("lead-only", worker=None, leader=True))
    assert node.worker is None
    stop = asyncio.Event()
    running = asyncio.create_task(node.run(stop))
    try:
        assert await eventually(lambda: _holder(app), what="the node to lead") == "lead-only"
        run_id = await app.enqueue_async("noop", {})
        # Leading includes planning and reaping, never claiming: the run stays pending
        # while the node goes on leading.
        await eventually(lambda: _holder(app), what="the node still to lead")
        assert (await (await app.store()).get_run(run_id)).state is RunState.PENDING
        assert await (await app.store()).list_workers() == []
    finally:
        stop.set()
        await asyncio.wait_for(running, 30)


async def test_a_worker_that_does_not_stand_never_leads(make_app):
    app = make_app(leader_lease_seconds=0.6)

    @app.handler("noop")
    async def noop(ctx: rota.RunContext, payload: Any) -> None:
        return None

    roles = NodeRoles.working(WorkerOptions(node_id="no-lead", leader=False))
    assert roles.leader is False
    node = await app.node(roles)
    stop = asyncio.Event()
    running = asyncio.create_task(node.run(stop))
    try:
        run_id = await app.enqueue_async("noop", {})
        await wait_for_state(await app.store(), run_id, RunState.SUCCEEDED)
        # A candidate would have started before the worker: none was.
        assert not [t for t in asyncio.all_tasks() if t.get_name() == "rota-leader"]
        assert await _holder(app) is None
    finally:
        stop.set()
        await asyncio.wait_for(running, 30)


def test_node_roles_name_a_valid_node():
    with pytest.raises(InvalidArgument, match="node_id"):
        NodeRoles("not a name", worker=None, leader=True)
