"""Bad input gets a clear error naming the value and what is allowed; nothing is written."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime

import pytest

import rota
from rota.bootstrap import make_store
from rota.errors import InvalidArgument, UnknownHandler
from tests.helpers import REPO


@pytest.fixture
def app(make_app):
    app = make_app()

    @app.handler("ok")
    async def ok(ctx: rota.RunContext, payload: dict) -> None:
        return None

    return app


@pytest.mark.parametrize(
    ("kwargs", "error", "names"),
    [
        ({"handler": "nope"}, UnknownHandler, ["'nope'", "ok"]),
        ({"payload": {"when": object()}}, InvalidArgument, ["payload", "JSON"]),
        ({"payload": float("nan")}, InvalidArgument, ["payload", "JSON"]),
        ({"priority": 11}, InvalidArgument, ["priority", "11", "1-10"]),
        ({"priority": 0}, InvalidArgument, ["priority", "1-10"]),
        ({"timeout": -1}, InvalidArgument, ["timeout", "-1", "> 0"]),
        ({"max_attempts": 0}, InvalidArgument, ["max_attempts", "0", ">= 1"]),
        ({"run_at": datetime(2026, 1, 1)}, InvalidArgument, ["run_at", "naive"]),
        ({"queue": "bad queue!"}, InvalidArgument, ["queue", "'bad queue!'", "letters"]),
        ({"idempotency_key": ""}, InvalidArgument, ["idempotency_key"]),
    ],
)
async def test_enqueue_rejects_and_writes_nothing(app, kwargs, error, names):
    kwargs = {"handler": "ok", "payload": {}, **kwargs}
    with pytest.raises(error) as caught:
        await app.enqueue_async(kwargs.pop("handler"), kwargs.pop("payload"), **kwargs)
    for name in names:
        assert name in str(caught.value)
    store = await app.store()
    assert await store.list_runs(rota.domain.runs.RunFilter()) == []


async def test_enqueue_many_validates_everything_before_writing(app):
    requests = [{"handler": "ok", "payload": {}}] * 3 + [{"handler": "ok", "priority": 99}]
    with pytest.raises(InvalidArgument, match="priority"):
        await app.enqueue_many_async(requests)
    store = await app.store()
    assert await store.list_runs(rota.domain.runs.RunFilter()) == []


@pytest.mark.parametrize(
    ("options", "names"),
    [
        ({"max_attempts": -1}, ["max_attempts", "-1"]),
        ({"timeout": 0}, ["timeout", "0"]),
        ({"priority": 42}, ["priority", "42"]),
        ({"queue": ""}, ["queue"]),
    ],
)
def test_handler_options_are_checked_at_registration(options, names):
    app = rota.App("sqlite:///unused.db")
    with pytest.raises(InvalidArgument) as caught:

        @app.handler("h", **options)
        async def h(ctx: rota.RunContext, payload: dict) -> None:
            return None

    for name in names:
        assert name in str(caught.value)


def test_handler_signature_is_checked():
    app = rota.App("sqlite:///unused.db")
    with pytest.raises(InvalidArgument, match=r"\(ctx, payload\)"):

        @app.handler("h")
        async def h(ctx: rota.RunContext) -> None:
            return None


def test_unsupported_database_url():
    with pytest.raises(InvalidArgument, match=r"mysql://x.*sqlite:///PATH.*postgresql://"):
        rota.App("mysql://x").enqueue("anything")


@pytest.mark.parametrize(
    "setting",
    [{"lease_seconds": 0}, {"poison_after": 0}, {"retention_seconds": -5}, {"map_max_items": 0}],
)
def test_bad_settings(setting):
    with pytest.raises(InvalidArgument, match=next(iter(setting))):
        rota.Settings(**setting)


def test_map_max_items_comes_from_the_environment_and_reaches_the_store():
    assert rota.Settings().map_max_items == 20_000
    settings = rota.Settings.from_env({"ROTA_MAP_MAX_ITEMS": "500"})
    assert settings.map_max_items == 500
    assert (
        make_store(settings.with_overrides(database_url="sqlite:///unused.db")).map_max_items == 500
    )
    with pytest.raises(InvalidArgument, match="ROTA_MAP_MAX_ITEMS"):
        rota.Settings.from_env({"ROTA_MAP_MAX_ITEMS": "many"})


def test_worker_with_database_down_exits_with_a_clear_message():
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "rota",
            "worker",
            "--app",
            "rota.examples:app",
            "--db",
            "postgresql://postgres@127.0.0.1:1/none",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        # It keeps trying this long first (30 s by default: a database coming up).
        env={**os.environ, "ROTA_START_UP_RETRY_SECONDS": "1"},
    )
    assert result.returncode == 3
    assert "cannot connect to PostgreSQL at postgresql://postgres@127.0.0.1:1/none" in result.stderr
    assert "Traceback" not in result.stderr


def test_cli_rejects_a_payload_that_is_not_json(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "rota",
            "enqueue",
            "send-report",
            "{not json",
            "--app",
            "rota.examples:app",
            "--db",
            f"sqlite:///{tmp_path}/x.db",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert result.returncode == 2
    assert "payload '{not json' is not JSON" in result.stderr


async def test_concurrent_first_uses_share_one_store(make_app):
    import asyncio

    app = make_app()
    stores = await asyncio.gather(*(app.store() for _ in range(10)))
    assert all(s is stores[0] for s in stores)
