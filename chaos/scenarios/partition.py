"""A partition between one worker (the leader, holding a run) and the database, through
chaos.proxy: the others take over the run and the leadership; once the partition heals,
the cut-off worker's late completion is refused by the fence, it talks to the database
again, and it can lead again when the others go."""

from __future__ import annotations

import time

from chaos import invariants, pause
from chaos.harness import Context
from chaos.proxy import PartitionProxy

NAME = "partition"
TITLE = "a partition between one worker and the database (TCP proxy)"
BACKEND = "postgres"
TIME_LIMIT = {"small": 120, "full": 300}
LEASE = 2.0
REAP = 0.2
TOLERANCE = 0.5  # as in the sigstop scenario


def prepare(ctx: Context) -> None:
    ctx.app.list_runs(limit=1)


def run(ctx: Context) -> None:
    proxy = PartitionProxy()
    proxy.start()
    try:
        _run(ctx, proxy)
    finally:
        proxy.heal()
        ctx.kill_all()
        proxy.stop()


def _run(ctx: Context, proxy: PartitionProxy) -> None:
    cut_off = "wp"
    ctx.start(cut_off, db_url=proxy.url(ctx.db_url), lease_seconds=LEASE, concurrency=2)
    ctx.wait(lambda: _leads(ctx, cut_off), 30, f"{cut_off} to lead")
    takeovers, failovers, relead, refusals = [], [], [], []
    enqueued = 0
    # How long each partition lasts at least; the longest outlives worker_dead_seconds
    # (10 s), so the healed node comes back from being declared dead.
    durations = ctx.pick([4.0], [4.0, 8.0, 15.0])
    ctx.figure("partitions, s", durations)
    for rep, duration in enumerate(durations):
        others = [f"a{rep}", f"b{rep}"]
        for node in others:
            ctx.start(node, lease_seconds=LEASE, concurrency=2)
        ctx.wait_registered(others)
        # The cut-off node claims a run that ends about 2 s into the partition: its
        # completion is sent into the partition and reaches the database on healing,
        # after the run was taken back, so the fence must refuse it there.
        for _try in range(5):
            run_id = pause.give_run_to(ctx, cut_off, [cut_off, *others], seconds=3.0)
            enqueued += 1
            if run_id is not None:
                break
        else:
            ctx.require(False, f"could not give a run to {cut_off} in 5 tries")
        assert run_id is not None
        ctx.require(_leads(ctx, cut_off), f"{cut_off} no longer leads before the partition")
        cut_at = time.time()
        proxy.partition()
        try:
            lost_at = ctx.wait(
                lambda: pause.attempt_lost_at(ctx, run_id, 1),
                30,
                f"run {run_id} of the cut-off worker to be taken back",
            )
            takeovers.append(lost_at - cut_at)
            new = ctx.wait(
                lambda: (info := ctx.leader()) and info[0] != cut_off and info,
                30,
                "a leader on the healthy side",
            )
            failovers.append(new[2] - cut_at)
            ctx.wait(lambda: pause.succeeded_fence(ctx, run_id), 30, f"run {run_id} to finish")
            time.sleep(max(0.0, cut_at + duration - time.time()))
        finally:
            proxy.heal()
        healed_at = time.time()
        refusals.append(
            ctx.wait(
                lambda: pause.refused_in_log(ctx, cut_off, run_id),
                30,
                f"{cut_off} to refuse its late completion of run {run_id}",
            )
        )
        ctx.wait(
            lambda: _heartbeat_after(ctx, cut_off, healed_at),
            30,
            f"{cut_off} to report to the registry again after the partition healed",
        )
        stopped_at = time.time()  # the others resign as they stop: measure from here
        for node in others:
            ctx.stop(node)
        info = ctx.wait(lambda: _leads(ctx, cut_off), 30, f"{cut_off} to lead again")
        relead.append(info[2] - stopped_at)
        check_id = ctx.app.enqueue("record", {"after": rep})
        enqueued += 1
        ctx.wait(
            lambda: ctx.scalar(
                "SELECT worker_id FROM rota_runs WHERE id = %s AND state = 'succeeded'",
                (check_id,),
            ),
            30,
            f"{cut_off} to run new work after the partition",
        )
    ctx.wait_drained(enqueued, 30)
    ctx.stop_all()
    bound = LEASE + REAP + TOLERANCE
    ctx.timings("run of the cut-off worker taken back after, s", takeovers)
    late = [round(s, 2) for s in takeovers if s > bound]
    ctx.expect(not late, f"runs taken back later than {bound} s: {late}")
    ctx.timings("a healthy node leads after, s", failovers)
    ctx.timings("the healed node leads again after the others start stopping, s", relead)
    ctx.figure("late completions refused, by how", refusals)
    ctx.figure("connections through the proxy", proxy.connections)
    invariants.check(ctx, invariants.Expect(runs=enqueued))


def _leads(ctx: Context, node: str) -> tuple[str, int, float] | None:
    info = ctx.leader()
    return info if info is not None and info[0] == node else None


def _heartbeat_after(ctx: Context, node: str, instant: float) -> bool:
    beat = ctx.scalar(
        "SELECT extract(epoch FROM heartbeat_at)::float8 FROM rota_workers WHERE node_id = %s",
        (node,),
    )
    return beat is not None and float(beat) > instant
