"""The PostgreSQL claim must stay an index range scan as finished runs pile up."""

from __future__ import annotations

import json

import psycopg
import pytest

from rota.store.postgres import PostgresStore
from rota.store.queries import load_queries

from .support import T0, new_run

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(60)]


async def test_claim_uses_the_claimable_index(pg_clean: str) -> None:
    store = PostgresStore(pg_clean)
    await store.open()
    try:
        await store.enqueue(
            [new_run(payload=json.dumps({"i": i}), priority=1 + i % 10) for i in range(4000)],
            T0,
        )
    finally:
        await store.close()
    async with await psycopg.AsyncConnection.connect(pg_clean, autocommit=True) as conn:
        await conn.execute(
            "UPDATE rota_runs SET state = 'succeeded', attempt = 1, fence = 1,"
            " finished_at = %(t)s WHERE id <= 2000",
            {"t": T0},
        )
        await conn.execute("ANALYZE rota_runs")
        claim = load_queries("postgres")["claim"]
        plans = []
        # Production passes now=None (the database clock); tests pass an instant.
        for now in (None, T0):
            params = {
                "queues": ["default", "emails"],
                "limit": 10,
                "worker_id": "worker-1",
                "lease_seconds": 30.0,
                "tags": [],
                "limited_handlers": [],
                "now": now,
            }
            cur = await conn.execute("EXPLAIN " + claim, params)
            plans.append("\n".join(row[0] for row in await cur.fetchall()))
    for plan in plans:
        assert "Index Scan using rota_runs_claimable on rota_runs" in plan, plan
        assert "Seq Scan on rota_runs" not in plan, plan
