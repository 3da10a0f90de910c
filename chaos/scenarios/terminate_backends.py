"""Connections killed with pg_terminate_backend at random during a drain (only this
scenario's database's backends): nothing lost, no effect twice, no attempt spent. Half
the runs carry a concurrency key, so limited claims are cut under the limits lock too."""

from __future__ import annotations

import random
import threading

from chaos import drain, pg
from chaos.harness import Context

NAME = "terminate-backends"
TITLE = "connections killed at random with pg_terminate_backend during a drain"
BACKEND = "postgres"
TIME_LIMIT = {"small": 150, "full": 420}


def prepare(ctx: Context) -> None:
    ctx.app.list_runs(limit=1)  # migrates


def run(ctx: Context) -> None:
    plan = drain.Drain(runs=ctx.pick(3000, 8000), hold=0.05, keys=20)
    rng = random.Random()
    pause = ctx.pick((0.2, 0.6), (0.1, 0.3))
    terminated: list[int] = []

    def fault(stop: threading.Event) -> None:
        # Let the drain get going, then cut one or two connections every 0.2-0.6 s
        # (0.1-0.3 s in the full size).
        stop.wait(1.0)
        while not stop.is_set():
            terminated.append(pg.terminate_backends(ctx.db_url, rng.choice((1, 2)), rng))
            stop.wait(rng.uniform(*pause))

    drain.run_with_fault(ctx, plan, fault, timeout=ctx.pick(100, 360), database_stays_up=True)
    ctx.figure("backends terminated", sum(terminated))
