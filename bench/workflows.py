"""Issue 13's workflow figure: one step returning a list of N items, a map over it and
a fan-in step. Measures the time from the workflow's start to the fan-in step
starting, and the cost per map item against N plain runs of the same no-op handler
drained by the same in-process worker, in the same process, one after the other.

    python -m bench.workflows --items 10000 --database sqlite
    python -m bench.workflows --items 10000 --database postgresql://postgres@127.0.0.1/db

A reduced run (small --items) is what docs/benchmarks.md reports when the machine is
shared; the scenario is the same.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from typing import Any

import rota
from rota.domain.runs import RunFilter
from rota.domain.states import RunState


def make_app(url: str) -> rota.App:
    settings = rota.Settings(database_url=url, poll_seconds=0.01, sqlite_poll_seconds=0.01)
    app = rota.App(settings=settings)

    @app.handler("items")
    def items(ctx: rota.RunContext, payload: dict[str, int]) -> list[int]:
        return list(range(payload["n"]))

    @app.handler("noop")
    def noop(ctx: rota.RunContext, payload: Any) -> None:
        return None

    @app.handler("fan-in")
    def fan_in(ctx: rota.RunContext, payload: Any) -> int:
        return len(ctx.parents["each"])

    flow = rota.Workflow("bench-map")
    listed = flow.step("items")
    each = flow.map("each", handler="noop", over=listed)
    flow.step("fan-in", after=[each])
    app.workflow(flow)
    return app


async def finished_run(store: Any, run_id: int) -> bool:
    run = await store.get_run(run_id)
    return run is not None and run.state.is_terminal


async def all_finished(store: Any, ids: list[int]) -> bool:
    """The last run ended and none of them is left unfinished (one read per state)."""
    last = await store.get_run(ids[-1])
    if last is None or not last.state.is_terminal:
        return False
    for state in (RunState.PENDING, RunState.CLAIMED, RunState.RUNNING, RunState.RETRYING):
        if await store.list_runs(RunFilter(state=state, limit=1)):
            return False
    return True


async def measure(url: str, n: int, concurrency: int) -> dict[str, Any]:
    app = make_app(url)
    store = await app.store()
    stop = asyncio.Event()
    worker = asyncio.create_task(app.work(stop, app.worker_options(concurrency=concurrency)))
    try:
        started = time.perf_counter()
        wf_run = await app.start_workflow_async("bench-map", {"n": n})
        # Poll the fan-in step's run alone: reading the whole workflow run (10,000
        # items) every few ms would compete with the worker for the store.
        fan_in_id = (await store.workflow_run(wf_run)).steps[2].run_id or 0
        while not await finished_run(store, fan_in_id):
            await asyncio.sleep(0.02)
        workflow_seconds = time.perf_counter() - started
        view = await store.workflow_run(wf_run)
        fan_in = await store.get_run(fan_in_id)
        assert fan_in is not None
        assert fan_in.started_at is not None
        to_fan_in = (fan_in.started_at - view.created_at).total_seconds()

        started = time.perf_counter()
        ids = await app.enqueue_many_async([{"handler": "noop"} for _ in range(n)])
        while not await all_finished(store, ids):
            await asyncio.sleep(0.02)
        plain_seconds = time.perf_counter() - started
    finally:
        stop.set()
        await worker
        await app.aclose()
    return {
        "items": n,
        "workflow_state": view.state.value,
        "start_to_fan_in_start_s": round(to_fan_in, 3),
        "workflow_total_s": round(workflow_seconds, 3),
        "plain_runs_total_s": round(plain_seconds, 3),
        "per_item_ms": round(1000 * workflow_seconds / n, 3),
        "per_plain_run_ms": round(1000 * plain_seconds / n, 3),
        "overhead_x": round(workflow_seconds / plain_seconds, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--database", default="sqlite")
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    url = args.database
    if url == "sqlite":
        url = f"sqlite:///{tempfile.mkdtemp()}/bench.db"
    print(json.dumps(asyncio.run(measure(url, args.items, args.concurrency))))


if __name__ == "__main__":
    main()
