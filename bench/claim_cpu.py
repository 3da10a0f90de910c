"""Server CPU per plain claim of 10 runs on PostgreSQL (ADR 0030), read from the
backend's own CPU time in /proc: CPU time, so a busy machine moves it less than wall time.

    python -m bench.claim_cpu                    # the claim as shipped
    python -m bench.claim_cpu --against fbaa7d0  # beside the claim of an older commit

With ``--against`` the two statements run in alternating rounds on one database (VACUUM
of the queue before each round, as its autovacuum settings would do under a drain), so
both see the same table; medians of the rounds are printed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
from datetime import UTC, datetime, timedelta

import psycopg

from bench.cpu import _cpu_seconds
from bench.pg import ADMIN_URL, fresh_database
from rota.domain.runs import NewRun
from rota.store.postgres import PostgresStore
from rota.store.queries import load_queries

T0 = datetime(2026, 1, 1, tzinfo=UTC)
CLAIM_SIZE = 10


def claim_of(commit: str) -> str:
    """The `claim` query as an older commit wrote it (its claim.sql, by name)."""
    text = subprocess.run(
        ["git", "show", f"{commit}:src/rota/store/sql/postgres/claim.sql"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    body = text.split("-- name: claim\n", 1)[1].split("\n-- name: ", 1)[0]
    return body


async def measure(url: str, variants: dict[str, str], rounds: int, claims: int) -> None:
    store = PostgresStore(url)
    await store.open()
    try:
        await store.migrate()
        needed = rounds * len(variants) * claims * CLAIM_SIZE
        for start in range(0, needed, 10_000):
            batch = min(10_000, needed - start)
            runs = [
                NewRun(handler="noop", payload_json=json.dumps({"i": i}), run_at=T0)
                for i in range(batch)
            ]
            await store.enqueue(runs, T0)
    finally:
        await store.close()
    params = {
        "queues": ["default"],
        "limit": CLAIM_SIZE,
        "worker_id": "bench",
        "lease_seconds": 30.0,
        "tags": [],
        "limited_handlers": [],
        "now": T0 + timedelta(seconds=1),
    }
    seen: dict[str, list[float]] = {name: [] for name in variants}
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute("ANALYZE")
        cur = await conn.execute("SELECT pg_backend_pid()")
        [(pid,)] = await cur.fetchall()
        order = list(variants.items())
        for round_no in range(rounds):
            for name, sql in order if round_no % 2 else order[::-1]:
                await conn.execute("VACUUM rota_runs_live")
                before = _cpu_seconds(pid)
                for _ in range(claims):
                    cur = await conn.execute(sql, params, prepare=True)
                    if len(await cur.fetchall()) != CLAIM_SIZE:
                        raise RuntimeError(f"{name}: a claim came back short")
                seen[name].append(1000 * (_cpu_seconds(pid) - before) / claims)
    for name, per_claim in seen.items():
        print(
            f"{name:>28}: server CPU per claim of {CLAIM_SIZE}: median"
            f" {statistics.median(per_claim):.3f} ms over {rounds} rounds of {claims}"
            f" ({', '.join(f'{x:.2f}' for x in sorted(per_claim))})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", help="a commit whose claim runs beside this one")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--claims", type=int, default=1000, help="claims per round")
    args = parser.parse_args()
    variants = {"this tree": load_queries("postgres")["claim"]}
    if args.against:
        variants[f"claim of {args.against}"] = claim_of(args.against)
    with fresh_database(ADMIN_URL, "claimcpu") as url:
        asyncio.run(measure(url, variants, args.rounds, args.claims))


if __name__ == "__main__":
    main()
