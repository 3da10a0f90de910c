"""The invariants, checked with SQL on what the database holds once a scenario is over.

Each check returns the offending rows (at most a few, as evidence); an empty list is a
pass. They hold whatever the fault was, so every scenario runs the ones that apply.
"""

from __future__ import annotations

from dataclasses import dataclass

from chaos.harness import Context

TERMINAL = "('succeeded', 'failed', 'timed_out', 'cancelled', 'dead_lettered')"
EVIDENCE = 5  # rows quoted per violation
# Outcomes a handler that never raises can only get from the infrastructure.
SPENT_OUTCOMES = "('failed', 'timed_out', 'cancelled')"


@dataclass(frozen=True)
class Expect:
    runs: int  # how many runs the scenario enqueued
    # The ``effect`` handler's runs write side_effects rows through ctx.transaction().
    effects: bool = False
    never_fail: bool = True  # the handlers never fail on their own
    no_lost_leases: bool = False  # no attempt may end "lost" (nothing stalled or died)


def create_effects_table(ctx: Context) -> None:
    """Where the effect handlers write, inside the transaction of their completion."""
    ctx.sql(
        "CREATE TABLE IF NOT EXISTS side_effects"
        " (run_id bigint NOT NULL, fence bigint NOT NULL, at timestamptz DEFAULT now())"
    )


def check(ctx: Context, expect: Expect) -> dict[str, int]:
    """Run every applicable invariant; record violations on ``ctx``; return counts."""
    violations: dict[str, list[object]] = {
        "runs missing (enqueued but not in the table)": _missing(ctx, expect.runs),
        "runs not done (not succeeded)": ctx.sql(
            "SELECT id, state, attempt, error FROM rota_runs WHERE state <> 'succeeded' ORDER BY id"
        ),
        "runs with two successful attempts": ctx.sql(
            "SELECT run_id, count(*) FROM rota_run_attempts WHERE outcome = 'succeeded'"
            " GROUP BY run_id HAVING count(*) > 1"
        ),
        "success recorded under a stale fence": ctx.sql(
            "SELECT a.run_id, a.fence, r.fence FROM rota_run_attempts a JOIN rota_runs r"
            " ON r.id = a.run_id WHERE a.outcome = 'succeeded' AND a.fence <> r.fence"
        ),
        "fences not monotonic per run": ctx.sql(
            "SELECT run_id, fence, attempt, prev_attempt FROM ("
            " SELECT run_id, fence, attempt, started_at,"
            "  lag(attempt) OVER w AS prev_attempt, lag(started_at) OVER w AS prev_started"
            " FROM rota_run_attempts WINDOW w AS (PARTITION BY run_id ORDER BY fence)) t"
            " WHERE attempt < prev_attempt OR started_at < prev_started"
        )
        + ctx.sql(
            "SELECT a.run_id, a.fence, r.fence FROM rota_run_attempts a JOIN rota_runs r"
            " ON r.id = a.run_id WHERE a.fence > r.fence"
        ),
        "runs stuck claimed with an expired lease": _stuck(ctx),
        # ADR 0027: the statement that finishes a run moves it; none is in both homes,
        # none finished is left in the queue, none is in history unfinished.
        "runs in both homes": ctx.sql(
            "SELECT l.id FROM rota_runs_live l JOIN rota_runs_history h ON h.id = l.id"
        ),
        "finished runs left in the queue": ctx.sql(
            f"SELECT id, state FROM rota_runs_live WHERE state IN {TERMINAL}"
        ),
        "run ids held twice": ctx.sql(
            "SELECT id, count(*) FROM rota_runs GROUP BY id HAVING count(*) > 1"
        ),
    }
    if expect.never_fail:
        violations["attempts spent by infrastructure faults"] = ctx.sql(
            "SELECT run_id, fence, outcome, substr(error, 1, 160) FROM rota_run_attempts"
            f" WHERE outcome IN {SPENT_OUTCOMES} ORDER BY run_id"
        )
    if expect.no_lost_leases:
        violations["leases lost by live workers"] = ctx.sql(
            "SELECT run_id, fence, worker_id, substr(error, 1, 120) FROM rota_run_attempts"
            " WHERE outcome = 'lost' ORDER BY run_id"
        )
    if expect.effects:
        violations.update(_effects(ctx))
    counts = {}
    for what, rows in violations.items():
        counts[what] = len(rows)
        ctx.expect(not rows, f"invariant violated: {what}; e.g. {rows[:EVIDENCE]}")
    ctx.figure("invariants", "all hold" if not any(counts.values()) else counts)
    _attempt_figures(ctx)
    return counts


def _missing(ctx: Context, runs: int) -> list[object]:
    present = ctx.scalar("SELECT count(*) FROM rota_runs")
    return [] if present == runs else [f"{runs} enqueued, {present} in rota_runs"]


def _stuck(ctx: Context) -> list[object]:
    if ctx.is_postgres:
        return ctx.sql(
            "SELECT id, worker_id, lease_expires_at FROM rota_runs"
            " WHERE state IN ('claimed', 'running') AND lease_expires_at < now()"
        )
    # SQLite stores instants as text in its own format; after the scenario every run
    # should be finished, so any run still held is stuck.
    return ctx.sql(
        "SELECT id, worker_id, lease_expires_at FROM rota_runs"
        " WHERE state IN ('claimed', 'running')"
    )


def _effects(ctx: Context) -> dict[str, list[object]]:
    return {
        "effects duplicated": ctx.sql(
            "SELECT run_id, count(*) FROM side_effects GROUP BY run_id HAVING count(*) > 1"
        ),
        "succeeded runs without their effect": ctx.sql(
            "SELECT r.id FROM rota_runs r WHERE r.state = 'succeeded' AND r.handler = 'effect'"
            " AND NOT EXISTS (SELECT 1 FROM side_effects e WHERE e.run_id = r.id)"
        ),
        "effects of runs that did not succeed": ctx.sql(
            "SELECT e.run_id, r.state FROM side_effects e JOIN rota_runs r ON r.id = e.run_id"
            " WHERE r.state <> 'succeeded'"
        ),
        "effects committed under a stale fence": ctx.sql(
            "SELECT e.run_id, e.fence, r.fence FROM side_effects e JOIN rota_runs r"
            " ON r.id = e.run_id WHERE e.fence <> r.fence"
        ),
    }


def _attempt_figures(ctx: Context) -> None:
    outcomes = dict(ctx.sql("SELECT outcome, count(*) FROM rota_run_attempts GROUP BY outcome"))
    ctx.figure("attempt outcomes", outcomes)
    ctx.figure(
        "runs needing more than one attempt",
        ctx.scalar("SELECT count(*) FROM rota_runs WHERE attempt > 1"),
    )
    twice_lost = ctx.sql(
        "SELECT run_id, count(*) FROM rota_run_attempts WHERE outcome = 'lost'"
        " GROUP BY run_id HAVING count(*) > 1 ORDER BY run_id"
    )
    if twice_lost:
        ctx.figure("runs that lost their worker more than once", len(twice_lost))
