"""What a limited claim sends, on both stores: the named queries each claim runs are
noted by a pass-through around the store's own dialect (every statement still runs on
the real database). A rated or keyed claim is serialised cluster-wide, so each round
trip under its lock bounds the whole cluster's limited drain (ADR 0016)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar
from unittest import mock

import psycopg
import pytest

from rota.domain.rates import Rate, RateLimit, RateScope
from rota.domain.states import RunState
from rota.errors import StoreUnavailable
from rota.store.core.claim_window import starts_logged
from rota.store.dialect import NO_PARAMS, Params, Row, Session
from rota.store.port import ClaimRequest, Store
from rota.store.postgres import PostgresStore
from rota.store.queries import load_queries

from .support import T0, at, bounded, enqueue_one, state_of, succeeded

T = TypeVar("T")
# Read through the store's short-lived caches, not by the claim itself.
CACHED = frozenset({"limits", "rates", "breaker_rules", "breakers_tripped", "paused_queues"})
# SQLite's read before the write lock (claims_read_first), not a round trip to a server.
READ_FIRST = "anything_due"


class _NotingSession:
    def __init__(self, inner: Session, sent: list[str]) -> None:
        self._inner = inner
        self._sent = sent

    async def rows(self, query: str, params: Params = NO_PARAMS) -> list[Row]:
        self._sent.append(query)
        return await self._inner.rows(query, params)

    async def rows_then_commit(self, query: str, params: Params = NO_PARAMS) -> list[Row]:
        self._sent.append(query)
        return await self._inner.rows_then_commit(query, params)

    async def batch(
        self, query: str, items: Sequence[Params], shared: Params = NO_PARAMS
    ) -> list[Row]:
        self._sent.append(query)
        return await self._inner.batch(query, items, shared)


class _NotingDialect:
    """The store's dialect, noting the name of every query sent through it."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.sent: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def rows(self, query: str, params: Params = NO_PARAMS, now: Any = None) -> list[Row]:
        self.sent.append(query)
        rows: list[Row] = await self._inner.rows(query, params, now)
        return rows

    @asynccontextmanager
    async def session(self, now: Any) -> AsyncIterator[_NotingSession]:
        async with self._inner.session(now) as session:
            yield _NotingSession(session, self.sent)

    async def in_serialised(self, now: Any, body: Callable[[Any], Awaitable[T]]) -> T:
        self.sent.append("claim_lock")
        result: T = await self._inner.in_serialised(
            now, lambda session: body(_NotingSession(session, self.sent))
        )
        return result


async def _claim_noting(
    store: Store, seconds: float, limit: int = 5
) -> tuple[list[int], list[str]]:
    """The runs one claim took, and the queries it sent (cache reads left out)."""
    noting = _NotingDialect(store._d)  # type: ignore[attr-defined]
    store._d = noting  # type: ignore[attr-defined]
    try:
        claimed = await store.claim(ClaimRequest("w", ("default",), limit, 30.0, ()), at(seconds))
    finally:
        store._d = noting._inner  # type: ignore[attr-defined]
    return [c.run_id for c in claimed], [q for q in noting.sent if q not in CACHED | {READ_FIRST}]


async def test_a_rated_claim_is_the_lock_and_three_statements(store: Store) -> None:
    await store.set_rate(RateLimit(RateScope.HANDLER, "job", Rate(100, 1)))
    runs = [await enqueue_one(store, T0) for _ in range(30)]
    first, sent = await _claim_noting(store, 1)
    assert first == runs[:5]
    assert sent == ["claim", "claim_lock", "rate_usage", "limited_candidates", "claim_ids"], (
        "the first claim tries the plain statement, which finds only rated runs"
    )
    second, sent = await _claim_noting(store, 1.1)
    assert second == runs[5:10]
    assert sent == ["claim_lock", "rate_usage", "limited_candidates", "claim_ids"], (
        "then the plain statement is skipped; the instant, the pruning and the count of "
        "live starts come in one statement, the log of the new starts with the claim"
    )


async def test_a_rated_claim_with_the_budget_spent_claims_nothing(store: Store) -> None:
    await store.set_rate(RateLimit(RateScope.HANDLER, "job", Rate(2, 60)))
    runs = [await enqueue_one(store, T0) for _ in range(4)]
    assert (await _claim_noting(store, 1))[0] == runs[:2]
    taken, sent = await _claim_noting(store, 2)
    assert taken == []
    assert "claim_ids" not in sent
    assert (await _claim_noting(store, 61))[0] == runs[2:], "the window passed"


async def test_plain_runs_behind_rated_work_are_still_claimed(store: Store) -> None:
    """A lane whose plain statement was skipped lets the limited claim take plain runs
    in priority order, then goes back to the plain statement."""
    await store.set_rate(RateLimit(RateScope.HANDLER, "job", Rate(1, 60)))
    rated = [await enqueue_one(store, T0) for _ in range(3)]
    assert (await _claim_noting(store, 1))[0] == rated[:1]
    plain = await enqueue_one(store, T0, handler="other")
    taken, sent = await _claim_noting(store, 2)
    assert taken == [plain]
    assert "claim" not in sent, "the lane was dry: the limited claim took the plain run"
    later = await enqueue_one(store, T0, handler="other")
    taken, sent = await _claim_noting(store, 3)
    assert taken == [later]
    assert sent[0] == "claim", "a plain run was seen: the plain statement is back"


async def test_a_dry_lane_with_nothing_due_goes_back_to_the_plain_claim(store: Store) -> None:
    await store.set_rate(RateLimit(RateScope.HANDLER, "job", Rate(1, 60)))
    await enqueue_one(store, T0)
    await enqueue_one(store, T0)
    assert len((await _claim_noting(store, 1))[0]) == 1
    assert (await _claim_noting(store, 2))[0] == [], "the rated budget is spent"
    plain = await enqueue_one(store, T0, handler="other")
    taken, sent = await _claim_noting(store, 3)
    assert taken == [plain]
    assert sent[0] == "claim"


async def test_a_keyed_claim_reads_only_its_candidates_keys(store: Store) -> None:
    """With no queue, handler or global limit set, what runs per key comes with the
    candidate window: no GROUP BY over every held run."""
    a = [await enqueue_one(store, T0, concurrency_key="a", concurrency_limit=2) for _ in range(3)]
    b = [await enqueue_one(store, T0, concurrency_key="b", concurrency_limit=2) for _ in range(3)]
    first = await store.claim(ClaimRequest("w", ("default",), 10, 30.0, ()), at(1))
    assert sorted(c.run_id for c in first) == sorted(a[:2] + b[:2])
    taken, sent = await _claim_noting(store, 2, limit=10)
    assert taken == [], "both keys are at their limit, counted from the held runs"
    assert sent == ["claim_lock", "limited_candidates"]
    [done] = [c for c in first if c.run_id == a[0]]
    await store.complete([succeeded(done)], at(3))
    taken, sent = await _claim_noting(store, 4, limit=10)
    assert taken == [a[2]], "one run of key a ended: one slot, and only for a"
    assert sent == ["claim_lock", "limited_candidates", "claim_ids"]


@pytest.mark.postgres
async def test_a_limited_claim_behind_a_stalled_holder_gives_up_and_recovers(
    pg_clean: str,
) -> None:
    """The lock's round trip opens the transaction by hand: when the lock times out the
    claim takes nothing, and the pooled connection comes back usable."""
    store = PostgresStore(pg_clean)
    await store.open()
    try:
        await store.set_rate(RateLimit(RateScope.HANDLER, "job", Rate(10, 1)))
        run = await enqueue_one(store, T0)
        lock = load_queries("postgres")["claim_lock"]
        async with await psycopg.AsyncConnection.connect(pg_clean) as holder:
            await holder.execute(lock.encode())  # held until this transaction ends
            request = ClaimRequest("w", ("default",), 5, 30.0, ())
            assert await bounded(store.claim(request, at(1))) == []
            await holder.rollback()
        assert [c.run_id for c in await bounded(store.claim(request, at(2)))] == [run]
    finally:
        await store.close()


def _claim_ids(run_ids: list[int]) -> dict[str, Any]:
    return {"ids": run_ids, "worker_id": "w", "lease_seconds": 30.0, **starts_logged(None)}


async def test_the_last_statement_of_a_serialised_claim_commits_it(store: Store) -> None:
    """rows_then_commit's statement is committed (on PostgreSQL with it, so that the
    cluster's limits lock is let go at once: what the body does after it cannot undo
    it), and a body that fails before it leaves nothing and holds no lock."""
    kept = await enqueue_one(store, T0)
    undone = await enqueue_one(store, T0, concurrency_key="k", concurrency_limit=1)

    async def commit_then_fail(session: Session) -> None:
        await session.rows_then_commit("claim_ids", _claim_ids([kept]))
        if store._d.name == "postgres":  # type: ignore[attr-defined]
            raise RuntimeError("after the commit")

    async def fail_before_commit(session: Session) -> None:
        await session.rows("claim_ids", _claim_ids([undone]))
        raise RuntimeError("before the commit")

    with contextlib.suppress(RuntimeError):
        await bounded(store._d.in_serialised(at(1), commit_then_fail))  # type: ignore[attr-defined]
    with pytest.raises(RuntimeError, match="before the commit"):
        await bounded(store._d.in_serialised(at(1), fail_before_commit))  # type: ignore[attr-defined]
    assert await state_of(store, kept) is RunState.CLAIMED
    assert await state_of(store, undone) is RunState.PENDING
    # The lock went with each transaction: the next limited claim takes it (a held
    # lock would make it give up after 2 s, with nothing).
    taken = await bounded(store.claim(ClaimRequest("w", ("default",), 5, 30.0, ()), at(2)))
    assert [c.run_id for c in taken] == [undone]


class _CutBeforeTheClaim(_NotingSession):
    """Ends its own backend (as a restart or pg_terminate_backend would) once it holds
    the limits lock, just before the claim and its COMMIT are sent."""

    def __init__(self, inner: Session, killer: psycopg.AsyncConnection[Any]) -> None:
        super().__init__(inner, [])
        self._killer = killer

    async def rows_then_commit(self, query: str, params: Params = NO_PARAMS) -> list[Row]:
        pid = self._inner.conn.info.backend_pid  # type: ignore[attr-defined]
        await self._killer.execute("SELECT pg_terminate_backend(%s)", [pid])
        return await self._inner.rows_then_commit(query, params)


@pytest.mark.postgres
async def test_a_limited_claim_cut_off_under_the_lock_takes_nothing(pg_clean: str) -> None:
    """The connection dies between the lock and the claim: the claim fails as the
    database being unreachable, nothing was claimed, and the lock went with the backend,
    so the next limited claim (a new connection from the pool) takes the run."""
    store = PostgresStore(pg_clean)
    await store.open()
    try:
        run = await enqueue_one(store, T0, concurrency_key="k", concurrency_limit=1)
        dialect = store._d  # type: ignore[attr-defined]
        serialised = dialect.in_serialised
        request = ClaimRequest("w", ("default",), 5, 30.0, ())
        async with await psycopg.AsyncConnection.connect(pg_clean, autocommit=True) as killer:

            async def cut(now: Any, body: Callable[[Any], Awaitable[T]]) -> T:
                return await serialised(
                    now, lambda session: body(_CutBeforeTheClaim(session, killer))
                )

            with mock.patch.object(dialect, "in_serialised", cut), pytest.raises(StoreUnavailable):
                await bounded(store.claim(request, at(1)))
        assert await state_of(store, run) is RunState.PENDING
        assert [c.run_id for c in await bounded(store.claim(request, at(2)))] == [run]
    finally:
        await store.close()


@pytest.mark.postgres
async def test_a_limited_claim_cancelled_while_waiting_for_the_lock_leaves_it_free(
    pg_clean: str,
) -> None:
    """A worker stopping while its claim waits on the server for the limits lock: the
    wait is cancelled mid-pipeline, the claim takes nothing, and once the holder lets go
    the next claim takes the run (the cancelled claim's connection holds nothing)."""
    store = PostgresStore(pg_clean)
    await store.open()
    try:
        run = await enqueue_one(store, T0, concurrency_key="k", concurrency_limit=1)
        request = ClaimRequest("w", ("default",), 5, 30.0, ())
        lock = load_queries("postgres")["claim_lock"]
        async with await psycopg.AsyncConnection.connect(pg_clean) as holder:
            await holder.execute(lock.encode())  # held until this transaction ends
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(store.claim(request, at(1)), 0.3)
            await holder.rollback()
        assert await state_of(store, run) is RunState.PENDING
        assert [c.run_id for c in await bounded(store.claim(request, at(2)))] == [run]
    finally:
        await store.close()
