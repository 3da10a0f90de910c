"""Putting one chosen worker process in charge of a run, so a fault can then be aimed
at the process that holds it (others are drained meanwhile, then resumed)."""

from __future__ import annotations

import re
import time

from chaos.harness import Context, ScenarioFailed

REFUSED = (
    "outcome rejected by the fence",
    "attempt result discarded",
    "lease lost; stopping the run",
)


def give_run_to(ctx: Context, target: str, nodes: list[str], seconds: float) -> int | None:
    """Enqueue a ``slow`` run (it sleeps ``seconds`` on its first attempt only) and see
    that ``target`` claims it. Returns the run id, or None if another node claimed it
    (that run is left to finish; the caller tries again)."""
    others = [n for n in nodes if n != target]
    for node in others:
        ctx.app.drain_worker(node)
    time.sleep(1.0)  # registry heartbeats come every 0.25 s: the drain has been seen
    run_id = ctx.app.enqueue("slow", {"seconds": seconds, "first_only": True})
    claimer = ctx.wait(
        lambda: ctx.scalar(
            "SELECT worker_id FROM rota_runs WHERE id = %s AND state IN ('claimed', 'running')",
            (run_id,),
        ),
        timeout=20,
        what=f"run {run_id} to be claimed",
    )
    for node in others:
        ctx.app.resume_worker(node)
    time.sleep(1.0)  # the others claim again before the fault
    return run_id if claimer == target else None


def give_run_retrying(
    ctx: Context, target: str, nodes: list[str], seconds: float, tries: int = 6
) -> tuple[int, int]:
    """:func:`give_run_to` until ``target`` holds the run: (run id, runs enqueued)."""
    for attempt in range(1, tries + 1):
        run_id = give_run_to(ctx, target, nodes, seconds)
        if run_id is not None:
            return run_id, attempt
    raise ScenarioFailed(f"could not give a run to {target} in {tries} tries")


def refused_in_log(ctx: Context, node: str, run_id: int) -> str | None:
    """The line in which ``node`` refused or discarded its stale attempt of ``run_id``."""
    pattern = re.compile(rf"\brun_id={run_id}\b")
    for line in ctx.log_text(node).splitlines():
        if any(message in line for message in REFUSED) and pattern.search(line):
            return next(m for m in REFUSED if m in line)
    return None


def attempt_lost_at(ctx: Context, run_id: int, fence: int) -> float | None:
    """When the reaper recorded attempt ``fence`` of ``run_id`` as lost (epoch s)."""
    value = ctx.scalar(
        "SELECT extract(epoch FROM finished_at)::float8 FROM rota_run_attempts"
        " WHERE run_id = %s AND fence = %s AND outcome = 'lost'",
        (run_id, fence),
    )
    return None if value is None else float(value)


def succeeded_fence(ctx: Context, run_id: int) -> int | None:
    return ctx.scalar(
        "SELECT fence FROM rota_runs WHERE id = %s AND state = 'succeeded'", (run_id,)
    )
