"""A partition between one worker (the leader, holding a run) and the database, through
chaos.proxy: the others take over the run and the leadership; once the partition heals,
the cut-off worker's late completion is refused by the fence, it talks to the database
again, and it can lead again when the others go."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

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
CUT_OFF = "wp"  # the node behind the proxy


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


@dataclass
class _Measured:
    takeovers: list[float] = field(default_factory=list)
    failovers: list[float] = field(default_factory=list)
    relead: list[float] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    enqueued: int = 0


def _run(ctx: Context, proxy: PartitionProxy) -> None:
    ctx.start(CUT_OFF, db_url=proxy.url(ctx.db_url), lease_seconds=LEASE, concurrency=2)
    ctx.wait(lambda: _leads(ctx, CUT_OFF), 30, f"{CUT_OFF} to lead")
    measured = _Measured()
    # How long each partition lasts at least; the longest outlives worker_dead_seconds
    # (10 s), so the healed node comes back from being declared dead. The second also
    # resets every open connection as it starts (a partition the node sees at once,
    # rather than as a silence).
    durations = ctx.pick([4.0], [4.0, 8.0, 15.0])
    ctx.figure("partitions, s", durations)
    for rep, duration in enumerate(durations):
        reset = rep == 1
        others = [f"a{rep}", f"b{rep}"]
        for node in others:
            ctx.start(node, lease_seconds=LEASE, concurrency=2)
        ctx.wait_registered(others)
        run_id = _partition(ctx, proxy, others, duration, measured, reset=reset)
        _after_healing(ctx, run_id, others, rep, measured)
    ctx.wait_drained(measured.enqueued, 30)
    ctx.stop_all()
    bound = LEASE + REAP + TOLERANCE
    ctx.timings("run of the cut-off worker taken back after, s", measured.takeovers)
    late = [round(s, 2) for s in measured.takeovers if s > bound]
    ctx.expect(not late, f"runs taken back later than {bound} s: {late}")
    ctx.timings("a healthy node leads after, s", measured.failovers)
    ctx.timings("the healed node leads again after the others start stopping, s", measured.relead)
    ctx.figure("late completions refused, by how", measured.refusals)
    ctx.figure("connections through the proxy", proxy.connections)
    invariants.check(ctx, invariants.Expect(runs=measured.enqueued))


def _partition(
    ctx: Context,
    proxy: PartitionProxy,
    others: list[str],
    duration: float,
    measured: _Measured,
    *,
    reset: bool,
) -> int:
    """Cut the leader off while it holds a run; heal once the healthy side has taken
    over (and ``duration`` has passed). Returns the run's id."""
    # The cut-off node claims a run that ends about 2 s into the partition: its
    # completion is sent into the partition and reaches the database on healing,
    # after the run was taken back, so the fence must refuse it there.
    run_id, tries = pause.give_run_retrying(ctx, CUT_OFF, [CUT_OFF, *others], seconds=3.0)
    measured.enqueued += tries
    ctx.require(_leads(ctx, CUT_OFF), f"{CUT_OFF} no longer leads before the partition")
    cut_at = time.time()
    proxy.partition()
    if reset:
        proxy.cut()
    try:
        lost_at = ctx.wait(
            lambda: pause.attempt_lost_at(ctx, run_id, 1),
            30,
            f"run {run_id} of the cut-off worker to be taken back",
        )
        measured.takeovers.append(lost_at - cut_at)
        new = ctx.wait(
            lambda: (info := ctx.leader()) and info[0] != CUT_OFF and info,
            30,
            "a leader on the healthy side",
        )
        measured.failovers.append(new[2] - cut_at)
        ctx.wait(lambda: pause.succeeded_fence(ctx, run_id), 30, f"run {run_id} to finish")
        time.sleep(max(0.0, cut_at + duration - time.time()))
    finally:
        proxy.heal()
    return run_id


def _after_healing(
    ctx: Context, run_id: int, others: list[str], rep: int, measured: _Measured
) -> None:
    """The healed node refuses its late completion, reports again, leads again once the
    others go, and runs new work."""
    healed_at = time.time()
    measured.refusals.append(
        ctx.wait(
            lambda: pause.refused_in_log(ctx, CUT_OFF, run_id),
            30,
            f"{CUT_OFF} to refuse its late completion of run {run_id}",
        )
    )
    ctx.wait(
        lambda: _heartbeat_after(ctx, CUT_OFF, healed_at),
        30,
        f"{CUT_OFF} to report to the registry again after the partition healed",
    )
    stopped_at = time.time()  # the others resign as they stop: measure from here
    for node in others:
        ctx.stop(node)
    info = ctx.wait(lambda: _leads(ctx, CUT_OFF), 30, f"{CUT_OFF} to lead again")
    measured.relead.append(info[2] - stopped_at)
    check_id = ctx.app.enqueue("record", {"after": rep})
    measured.enqueued += 1
    ctx.wait(
        lambda: ctx.scalar(
            "SELECT worker_id FROM rota_runs WHERE id = %s AND state = 'succeeded'",
            (check_id,),
        ),
        30,
        f"{CUT_OFF} to run new work after the partition",
    )


def _leads(ctx: Context, node: str) -> tuple[str, int, float] | None:
    info = ctx.leader()
    return info if info is not None and info[0] == node else None


def _heartbeat_after(ctx: Context, node: str, instant: float) -> bool:
    beat = ctx.scalar(
        "SELECT extract(epoch FROM heartbeat_at)::float8 FROM rota_workers WHERE node_id = %s",
        (node,),
    )
    return beat is not None and float(beat) > instant
