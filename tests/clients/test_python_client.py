"""rota.client against a live server: the sync and the async client, every call, typed
errors, pagination and the checks made before anything is sent."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from datetime import datetime

import httpx
import pytest

from rota.client import ApiError, AsyncRotaClient, RotaClient, RunNotFinished, ServerUnreachable
from rota.errors import InvalidArgument
from tests.helpers import REPO

pytestmark = pytest.mark.slow


def test_enqueue_wait_and_read_back(rota_server_url: str, admin_token: str) -> None:
    with RotaClient(rota_server_url, admin_token) as rota:
        run_id = rota.enqueue("echo", {"n": 1}, queue="default", priority=3)
        run = rota.wait_for(run_id, timeout=30)
        assert (run["state"], run["result"], run["priority"]) == ("succeeded", {"n": 1}, 3)
        detail = rota.get_run(run_id)
        assert [a["outcome"] for a in detail["attempts"]] == ["succeeded"]
        [line] = rota.run_logs(run_id)
        assert line["message"] == "echoing"
        assert rota.run_logs(run_id, after=line["seq"]) == []
        # The same key is the same run: a retried enqueue never starts work twice.
        again = rota.enqueue("echo", {"n": 1}, idempotency_key="once")
        assert rota.enqueue("echo", {"n": 2}, idempotency_key="once") == again


def test_jobs_trigger_pause_resume_and_delete(rota_server_url: str, admin_token: str) -> None:
    with RotaClient(rota_server_url, admin_token) as rota:
        job = rota.create_job({"name": "py-nightly", "handler": "echo", "cron": "0 2 * * *"})
        assert job["name"] == "py-nightly"
        assert "py-nightly" in [j["name"] for j in rota.list_jobs()]
        assert rota.pause_job("py-nightly")["paused"] is True
        assert rota.resume_job("py-nightly")["paused"] is False
        assert rota.update_job("py-nightly", {"payload": {"x": 1}})["payload"] == {"x": 1}
        run_id = rota.trigger("py-nightly", {"x": 2})
        assert rota.wait_for(run_id, timeout=30)["result"] == {"x": 2}
        rota.delete_job("py-nightly")
        with pytest.raises(ApiError) as missing:
            rota.get_job("py-nightly")
        assert (missing.value.status, missing.value.type) == (404, "urn:rota:problem:not-found")
        assert "py-nightly" in missing.value.detail


def test_dead_letters_cancel_and_replay(rota_server_url: str, admin_token: str) -> None:
    with RotaClient(rota_server_url, admin_token) as rota:
        dead = rota.enqueue("doomed", None)
        assert rota.wait_for(dead, timeout=30)["state"] == "dead_lettered"
        assert dead in [run["id"] for run in rota.iter_dead(handler="doomed")]
        [replayed] = rota.replay_dead([dead])
        assert replayed["new_run_id"] > dead
        assert rota.requeue_run(dead) == replayed["new_run_id"]  # asked twice: same run

        sleepy = rota.enqueue("sleepy", None)
        rota.cancel_run(sleepy)
        assert rota.wait_for(sleepy, timeout=30)["state"] in ("cancelled", "succeeded")
        still_sleeping = rota.enqueue("sleepy", None)
        with pytest.raises(RunNotFinished) as waited:
            rota.wait_for(still_sleeping, timeout=0.3, poll=0.1)
        assert waited.value.run_id == still_sleeping
        rota.cancel_run(still_sleeping)
        assert rota.wait_for(still_sleeping, timeout=30)["state"] in ("cancelled", "succeeded")


def test_bulk_actions_count_then_act(rota_server_url: str, admin_token: str) -> None:
    later = datetime.fromisoformat("2099-01-01T00:00:00+00:00")  # they stay pending
    with RotaClient(rota_server_url, admin_token) as rota:
        for n in range(2):
            rota.enqueue("echo", {"n": n}, queue="py-bulk", run_at=later)
        assert rota.preview_bulk("cancel", queue="py-bulk", state="pending") == {
            "action": "cancel",
            "count": 2,
        }
        with pytest.raises(ApiError) as changed:
            rota.run_bulk("cancel", 3, queue="py-bulk")
        assert (changed.value.status, changed.value.type) == (
            409,
            "urn:rota:problem:count-changed",
        )
        done = rota.run_bulk("cancel", 2, queue="py-bulk", state=["pending"])
        assert (done["matched"], done["affected"], done["skipped"]) == (2, 2, 0)
        assert rota.preview_bulk("delete", queue="py-bulk")["count"] == 2
        with pytest.raises(InvalidArgument):
            rota.preview_bulk("cancel", created_after=datetime(2026, 1, 1))  # naive: not sent


def test_pagination_walks_every_page_once(rota_server_url: str, admin_token: str) -> None:
    with RotaClient(rota_server_url, admin_token) as rota:
        made = {rota.enqueue("echo", i, queue="paged") for i in range(7)}
        walked = [run["id"] for run in rota.iter_runs(queue="paged", limit=3)]
        assert sorted(walked) == sorted(made)
        assert len(walked) == len(set(walked))
        first = rota.list_runs(queue="paged", limit=3)
        assert len(first["items"]) == 3
        assert first["next_cursor"]


def test_workers_and_leader(rota_server_url: str, admin_token: str) -> None:
    with RotaClient(rota_server_url, admin_token) as rota:
        [worker] = rota.list_workers()
        assert rota.drain_worker(worker["node_id"])["state"] == "draining"
        assert rota.resume_worker(worker["node_id"])["state"] == "active"
        leader = rota.leader()
        assert leader is not None
        assert leader["holder"] == worker["node_id"]


async def test_the_async_client_is_the_same_client(rota_server_url: str, admin_token: str) -> None:
    async with AsyncRotaClient(rota_server_url, admin_token) as rota:
        run_id = await rota.enqueue("echo", ["async"])
        assert (await rota.wait_for(run_id, timeout=30))["result"] == ["async"]
        seen = [run["id"] async for run in rota.iter_runs(handler="echo", limit=2)]
        assert run_id in seen
        with pytest.raises(ApiError) as refused:
            await rota.enqueue("nope")
        assert refused.value.status == 422
        assert "handler" in refused.value.detail


def test_auth_failure_is_a_typed_error(rota_server_url: str) -> None:
    with RotaClient(rota_server_url, "not-a-token") as rota, pytest.raises(ApiError) as refused:
        rota.list_jobs()
    assert refused.value.status == 401
    assert refused.value.type.startswith("urn:rota:problem:")


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"url": ""}, "url"), ({"url": "ftp://x"}, "url"), ({"timeout": -1}, "timeout")],
)
def test_bad_settings_are_refused_at_once(kwargs: dict[str, object], field: str) -> None:
    settings: dict[str, object] = {"url": "http://127.0.0.1:1", **kwargs}
    with pytest.raises(InvalidArgument, match=field):
        RotaClient(**settings)  # type: ignore[arg-type]


def test_bad_input_is_refused_before_anything_is_sent() -> None:
    sent: list[httpx.Request] = []
    transport = httpx.MockTransport(lambda request: sent.append(request) or httpx.Response(500))
    with RotaClient("http://rota.invalid", "t", transport=transport) as rota:
        with pytest.raises(InvalidArgument, match="payload"):
            rota.enqueue("echo", {"n": math.nan})
        with pytest.raises(InvalidArgument, match="payload"):
            rota.enqueue("echo", {"when": datetime.now()})
        with pytest.raises(InvalidArgument, match="timeout"):
            rota.enqueue("echo", None, timeout=-5)
        with pytest.raises(InvalidArgument, match="run_at"):
            rota.enqueue("echo", None, run_at=datetime(2030, 1, 1))  # naive
        with pytest.raises(InvalidArgument, match="timeout"):
            rota.wait_for(1, timeout=0)
    assert sent == []


def test_reads_and_keyed_writes_are_retried_after_a_bad_gateway() -> None:
    answers = iter([httpx.Response(503), httpx.Response(201, json={"run_id": 9})])
    keys: list[str] = []

    def respond(request: httpx.Request) -> httpx.Response:
        keys.append(request.headers["Idempotency-Key"])
        return next(answers)

    transport = httpx.MockTransport(respond)
    with RotaClient("http://rota.invalid", "t", transport=transport) as rota:
        assert rota.enqueue("echo", None) == 9
    assert len(keys) == 2
    assert keys[0] == keys[1]


def test_an_unreachable_server_is_named() -> None:
    with RotaClient("http://127.0.0.1:1", retries=0) as rota, pytest.raises(ServerUnreachable):
        rota.list_jobs()


def test_readme_example_runs_as_printed(rota_server_url: str, admin_token: str) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## From other services") :]
    block = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert block is not None
    env = {**os.environ, "ROTA_URL": rota_server_url, "ROTA_TOKEN": admin_token}
    result = subprocess.run(
        [sys.executable, "-c", block.group(1)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "succeeded {'rows': 500}"
