"""Workers whose clocks are 120 s ahead and 120 s behind (libfaketime), each leading in
turn, with runs that outlive several lease renewals: no lease is taken back early,
since lease expiry is judged by the database clock alone."""

from __future__ import annotations

import shutil
from pathlib import Path

from chaos import invariants
from chaos.harness import Context

NAME = "clock-skew"
TITLE = "workers with clocks +120 s and -120 s (faketime)"
BACKEND = "postgres"
TIME_LIMIT = {"small": 120, "full": 240}
LEASE = 2.0
LIBFAKETIME = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")


def skewed(offset: str) -> dict[str, str]:
    """The environment that shifts a process's wall clock by ``offset`` ("+120").
    CLOCK_MONOTONIC stays real: libfaketime 0.9.10 breaks timed waits in threads when
    it fakes it, and a monotonic clock has no meaning across machines anyway."""
    return {
        "LD_PRELOAD": str(LIBFAKETIME),
        "FAKETIME": offset,
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
    }


def prepare(ctx: Context) -> None:
    ctx.require(
        LIBFAKETIME.exists() and shutil.which("faketime"),
        f"libfaketime is not installed ({LIBFAKETIME}): apt-get install -y faketime",
    )
    ctx.app.list_runs(limit=1)


def run(ctx: Context) -> None:
    batch = ctx.pick(24, 48)
    enqueued = 0
    offsets_seen: dict[int, dict[str, int]] = {}
    # Each phase, a skewed node leads (it runs the reaper): ahead first, then behind.
    for phase, (leader, offset) in enumerate((("ahead", "+120"), ("behind", "-120"))):
        lead = f"{leader}{phase}"
        ctx.start(lead, lease_seconds=LEASE, env=skewed(offset), concurrency=8, tags=(lead,))
        ctx.wait(lambda n=lead: (info := ctx.leader()) and info[0] == n, 30, f"{lead} to lead")
        other = "behind" if leader == "ahead" else "ahead"
        helpers = [f"{other}{phase}", f"true{phase}"]
        ctx.start(
            helpers[0],
            lease_seconds=LEASE,
            env=skewed("-120" if offset == "+120" else "+120"),
            concurrency=8,
            tags=(helpers[0],),
        )
        ctx.start(helpers[1], lease_seconds=LEASE, concurrency=8, tags=(helpers[1],))
        ctx.wait_registered([lead, *helpers])
        offsets = _clock_offsets(ctx, [lead, *helpers])
        offsets_seen[phase] = offsets
        enqueued += 3 * len(helpers) + 3  # the clock runs
        # Each run outlives several renewals (every lease/3), on every kind of clock.
        ctx.app.enqueue_many(
            [{"handler": "slow", "payload": {"seconds": LEASE * 1.5}} for _ in range(batch)]
        )
        enqueued += batch
        ctx.wait_drained(enqueued, 90)
        for node in (lead, *helpers):
            ctx.stop(node)
    ctx.stop_all()
    ctx.figure("runs", enqueued)
    ctx.figure("worker clock minus database clock (from clock runs), s", offsets_seen)
    started = [m for m in ctx.marks_lines() if m[-1] == "started"]
    by_worker: dict[str, int] = {}
    for words in started:
        by_worker[words[2]] = by_worker.get(words[2], 0) + 1
    ctx.figure("slow runs started, by worker", by_worker)
    ctx.expect(len(started) == len({m[0] for m in started}), "a slow run was started twice")
    expected = {"ahead": 120, "behind": -120, "true": 0}
    wrong = {
        node: offset
        for phase in offsets_seen.values()
        for node, offset in phase.items()
        if abs(offset - expected[node.rstrip("0123456789")]) > 5
    }
    measured = sum(len(phase) for phase in offsets_seen.values())
    ctx.expect(
        not wrong and measured == 6,
        f"faketime did not shift the workers' clocks as asked: {offsets_seen}",
    )
    invariants.check(ctx, invariants.Expect(runs=enqueued, no_lost_leases=True))


def _clock_offsets(ctx: Context, nodes: list[str]) -> dict[str, int]:
    """How far each worker's wall clock is from the database's: ``clock`` runs return
    the worker's time.time(), finished_at is the database's now() at completion. Each
    worker carries its name as a tag, and three runs need each tag: all are measured."""
    ids = ctx.app.enqueue_many(
        [{"handler": "clock", "tags": [node]} for node in nodes for _ in range(3)]
    )
    ctx.wait_drained(int(ctx.scalar("SELECT count(*) FROM rota_runs")), 30)
    offsets: dict[str, list[float]] = {}
    for result, finished in ctx.sql(
        "SELECT result, extract(epoch FROM finished_at)::float8 FROM rota_runs WHERE id = ANY(%s)",
        (ids,),
    ):
        offsets.setdefault(result["worker"], []).append(result["time"] - finished)
    return {node: round(sum(v) / len(v)) for node, v in offsets.items() if node in nodes}
