"""enqueue(connection=...) and publish(connection=...) take SQLAlchemy connections and
sessions (sync and async) on PostgreSQL with psycopg: the run is written in the
caller's transaction, so it exists if and only if that commits."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, create_async_engine
from sqlalchemy.orm import Session

import rota
from rota.errors import InvalidArgument

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(60)]


def sqlalchemy_url(url: str) -> str:
    return url.replace("postgresql://", "postgresql+psycopg://", 1)


@pytest.fixture
def app(pg_clean: str) -> Iterator[rota.App]:
    app = rota.App(pg_clean)

    @app.handler("welcome")
    def welcome(ctx: rota.RunContext, payload: object) -> None: ...

    app.list_runs()  # opens the store: rota's tables exist before any enqueue below
    try:
        yield app
    finally:
        app.close()


@pytest.fixture
def engine(pg_clean: str) -> Iterator[Engine]:
    engine = create_engine(sqlalchemy_url(pg_clean))
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE IF NOT EXISTS users (name text)"))
        conn.execute(text("TRUNCATE users"))
    try:
        yield engine
    finally:
        engine.dispose()


@pytest.fixture
async def async_engine(pg_clean: str, engine: Engine) -> AsyncIterator[AsyncEngine]:
    engine = create_async_engine(sqlalchemy_url(pg_clean))
    try:
        yield engine
    finally:
        await engine.dispose()


def handlers_enqueued(app: rota.App) -> list[object]:
    return [run.payload for run in app.list_runs(handler="welcome")]


def test_a_session_that_commits_has_its_run(app: rota.App, engine: Engine):
    with Session(engine) as session, session.begin():
        session.execute(text("INSERT INTO users VALUES ('ada')"))
        app.enqueue("welcome", {"user": "ada"}, connection=session)
    assert handlers_enqueued(app) == [{"user": "ada"}]


def test_a_session_rolled_back_leaves_no_run(app: rota.App, engine: Engine):
    with Session(engine) as session:
        session.execute(text("INSERT INTO users VALUES ('bob')"))
        app.enqueue("welcome", {"user": "bob"}, connection=session)
        session.rollback()
    assert handlers_enqueued(app) == []
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM users")).scalar() == 0


def test_a_core_connection_commits_and_rolls_back_with_its_run(app: rota.App, engine: Engine):
    with engine.connect() as conn:
        app.enqueue("welcome", {"n": 1}, connection=conn)
        conn.rollback()
        app.enqueue("welcome", {"n": 2}, connection=conn)
        conn.commit()
    assert handlers_enqueued(app) == [{"n": 2}]


def test_publish_takes_a_session_too(app: rota.App, engine: Engine):
    app.schedule("greeter", handler="welcome")
    app.subscribe("user.created", job="greeter")
    with Session(engine) as session:
        app.publish("user.created", {"user": "cy"}, connection=session)
        session.rollback()
    assert handlers_enqueued(app) == []
    with Session(engine) as session, session.begin():
        app.publish("user.created", {"user": "cy"}, connection=session)
    assert len(handlers_enqueued(app)) == 1


async def test_an_async_session_commits_and_rolls_back_with_its_run(
    app: rota.App, async_engine: AsyncEngine
):
    async with AsyncSession(async_engine) as session:
        await session.execute(text("INSERT INTO users VALUES ('dee')"))
        await app.enqueue_async("welcome", {"user": "dee"}, connection=session)
        await session.rollback()
        await app.enqueue_async("welcome", {"user": "eve"}, connection=session)
        await session.commit()
    assert handlers_enqueued(app) == [{"user": "eve"}]


async def test_an_async_core_connection_commits_with_its_run(
    app: rota.App, async_engine: AsyncEngine
):
    async with async_engine.begin() as conn:
        await app.enqueue_async("welcome", {"user": "fay"}, connection=conn)
    assert handlers_enqueued(app) == [{"user": "fay"}]


async def test_an_async_session_in_the_sync_door_is_refused_in_one_line(
    app: rota.App, async_engine: AsyncEngine
):
    async with AsyncSession(async_engine) as session:
        with pytest.raises(InvalidArgument, match="an async one goes to enqueue_async"):
            app.enqueue("welcome", connection=session)


def test_another_driver_is_refused_in_one_line(app: rota.App, tmp_path: Path):
    engine = create_engine(f"sqlite:///{tmp_path / 'other.db'}")
    try:
        with Session(engine) as session, pytest.raises(InvalidArgument) as refused:
            app.enqueue("welcome", connection=session)
    finally:
        engine.dispose()
    assert str(refused.value) == (
        "invalid connection: 'SQLAlchemy on sqlite+pysqlite'; expected a psycopg "
        "connection, or a SQLAlchemy Connection/Session on postgresql+psycopg"
    )
