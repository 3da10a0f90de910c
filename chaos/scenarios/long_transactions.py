"""Handlers that hold ctx.transaction() longer than the lease TTL, more of them at once
than the worker's pool has connections: no lease is lost (renewals never wait behind
handler-held connections), every effect is written once."""

from __future__ import annotations

from chaos import invariants
from chaos.harness import Context

NAME = "long-transactions"
TITLE = "handlers holding ctx.transaction() longer than the lease TTL"
BACKEND = "postgres"
TIME_LIMIT = {"small": 120, "full": 240}
LEASE = 2.0
CONCURRENCY = 8  # twice the default pool_size (4)


def prepare(ctx: Context) -> None:
    ctx.app.list_runs(limit=1)


def run(ctx: Context) -> None:
    invariants.create_effects_table(ctx)
    # The leader (it reaps expired leases) has room for one handler only, so its own
    # pool is never starved: it sees the others' leases expire if they do.
    ctx.start("leader", lease_seconds=LEASE, concurrency=1)
    ctx.wait(lambda: (info := ctx.leader()) and info[0] == "leader", 30, "the leader node to lead")
    workers = ["w1", "w2"]
    for node in workers:
        ctx.start(node, lease_seconds=LEASE, concurrency=CONCURRENCY)
    ctx.wait_registered(["leader", *workers])
    waves = ctx.pick(2, 4)
    runs = waves * (CONCURRENCY * len(workers) + 1)
    hold = LEASE * 1.5
    ctx.app.enqueue_many(
        [{"handler": "effect", "payload": {"hold": hold, "n": n}} for n in range(runs)]
    )
    seconds = ctx.wait_drained(runs, ctx.pick(90, 180))
    ctx.stop_all()
    ctx.figure("runs", runs)
    ctx.figure("transaction held by each handler, s", hold)
    ctx.figure("drain seconds (ideal: waves x hold)", f"{seconds:.1f} ({waves * hold:.1f})")
    invariants.check(ctx, invariants.Expect(runs=runs, effects=True, no_lost_leases=True))
