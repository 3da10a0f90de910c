"""`rota worker --http HOST:PORT`: /metrics, /health/live and /health/ready for a
standalone worker; bad or taken addresses are a clear error and a non-zero exit."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import httpx
import pytest

import rota
from rota.domain.workers import WorkerState
from rota.engine.worker_http import AddressUnusable, HttpAddress, WorkerHttp, serving
from rota.errors import InvalidArgument
from tests.engine.conftest import working
from tests.helpers import REPO, eventually, start_worker, stop_gracefully, wait_until

TOKEN = "worker-scrape-token-0123456789-abcdefgh"


async def test_health_and_metrics_beside_a_live_worker(make_app) -> None:
    app = make_app()

    @app.handler("wh-ok")
    async def ok(ctx: rota.RunContext, payload: int) -> int:
        return payload

    http = WorkerHttp.open("127.0.0.1:0")
    store = await app.store()
    base = f"http://127.0.0.1:{http.port}"
    async with (
        httpx.AsyncClient(base_url=base, timeout=5) as client,
        serving(http, store, "wh-node"),
    ):
        assert (await client.get("/health/live")).json() == {"status": "live"}
        before = await client.get("/health/ready")
        assert before.status_code == 503
        assert "not registered" in before.json()["detail"]
        async with working(app, node_id="wh-node"):

            async def ready() -> bool:
                return (await client.get("/health/ready")).status_code == 200

            await eventually(ready, what="the worker to be ready")
            await app.enqueue_async("wh-ok", 1)
            scraped = await client.get("/metrics")
            assert scraped.status_code == 200
            assert "rota_runs_in_flight" in scraped.text
            await store.set_worker_state("wh-node", WorkerState.DRAINING)
            drained = await client.get("/health/ready")
            assert drained.status_code == 503
            assert "draining" in drained.json()["detail"]
        assert (await client.post("/metrics")).status_code == 405
        assert (await client.get("/nope")).status_code == 404


async def test_the_scrape_token_guards_metrics_not_health(make_app) -> None:
    app = make_app()
    http = WorkerHttp.open("127.0.0.1:0", TOKEN)
    async with (
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{http.port}", timeout=5) as client,
        serving(http, await app.store(), "wh-node2"),
    ):
        assert (await client.get("/metrics")).status_code == 401
        wrong = await client.get("/metrics", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        ok = await client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
        assert ok.status_code == 200
        assert (await client.get("/health/live")).status_code == 200


@pytest.mark.parametrize("address", ["nonsense", "host:", ":80", "127.0.0.1:0x10", "h:70000"])
def test_a_malformed_address_is_named(address: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        HttpAddress.parse(address)
    assert "--http" in str(caught.value)
    assert repr(address) in str(caught.value)


def test_a_taken_port_is_named() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(AddressUnusable) as caught:
            WorkerHttp.open(f"127.0.0.1:{port}")
    assert f"127.0.0.1:{port}" in str(caught.value)


@pytest.mark.slow
def test_the_cli_refuses_a_taken_or_malformed_address(sqlite_url: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for address, expected in ((f"127.0.0.1:{port}", f"127.0.0.1:{port}"), ("x", "'x'")):
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "rota",
                    "worker",
                    "--app",
                    "tests.apps.proc_app:app",
                    "--db",
                    sqlite_url,
                    "--http",
                    address,
                ],
                cwd=REPO,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            assert done.returncode == 2, done.stderr
            assert expected in done.stderr
            assert "--http" in done.stderr


@pytest.mark.slow
def test_a_worker_process_serves_metrics_and_health(db_url: str, tmp_path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = start_worker(
        db_url,
        "wh-proc",
        tmp_path,
        args=("--http", f"127.0.0.1:{port}"),
        log_file=tmp_path / "worker.log",
    )
    try:

        def ready() -> bool:
            try:
                return (
                    httpx.get(f"http://127.0.0.1:{port}/health/ready", timeout=2).status_code == 200
                )
            except httpx.HTTPError:
                return False

        wait_until(ready, timeout=30, what="the worker's /health/ready")
        scraped = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5)
        assert scraped.status_code == 200
        assert "rota_leader" in scraped.text
    finally:
        stop_gracefully(proc)
    assert proc.returncode == 0, (tmp_path / "worker.log").read_text()


_APP_AND_DB = ("--app", "tests.apps.proc_app:app", "--db")


def _enqueue(sqlite_url: str, env: dict[str, str], handler: str) -> int:
    enqueued = subprocess.run(
        [sys.executable, "-m", "rota", "enqueue", handler, '{"n": 1}', *_APP_AND_DB, sqlite_url],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return int(enqueued.stdout.strip())


def _finished_lines_of_a_worker(
    sqlite_url: str, tmp_path, handlers: list[str], levels: list[str], env: dict[str, str]
) -> tuple[list[int], list[dict[str, object]]]:
    """Enqueue one run per handler, run `rota --log-json [levels] worker` until the last
    one's line is written, stop it gracefully; the run ids and every `run finished` line."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "ROTA_TEST_MARKS": str(tmp_path), **env}
    run_ids = [_enqueue(sqlite_url, env, handler) for handler in handlers]
    log = tmp_path / "worker.log"
    worker = ["worker", *_APP_AND_DB, sqlite_url, "--node-id", "json-w"]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "rota", "--log-json", *levels, *worker],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=out,
        )

    def finished_lines() -> list[dict[str, object]]:
        return [
            dict(json.loads(line))
            for line in log.read_text().splitlines()
            if '"run finished"' in line
        ]

    try:
        # Runs are claimed in enqueue order: the last one's line comes after the others'
        # outcomes (one worker, a batch written together or in order).
        wait_until(
            lambda: any(e["run_id"] == run_ids[-1] for e in finished_lines()),
            timeout=30,
            what="the last run's finished line",
        )
    finally:
        stop_gracefully(proc)
    assert proc.returncode == 0, log.read_text()
    return run_ids, finished_lines()


@pytest.mark.slow
def test_a_worker_process_logs_each_finished_run_as_json(sqlite_url: str, tmp_path) -> None:
    # A success's line is at debug (ADR 0026): asked for here.
    [run_id], lines = _finished_lines_of_a_worker(
        sqlite_url, tmp_path, ["record"], ["--log-level", "debug"], {}
    )
    [entry] = lines
    assert entry["run_id"] == run_id
    assert entry["outcome"] == "succeeded"
    assert entry["handler"] == "record"
    assert entry["worker"] == "json-w"
    assert entry["level"] == "debug"
    assert {"queue", "attempt", "fence", "duration_seconds", "job_id"} <= set(entry)


@pytest.mark.slow
def test_at_the_default_level_only_runs_that_did_not_succeed_are_told(
    sqlite_url: str, tmp_path
) -> None:
    """`rota worker` as shipped (info): no line for a success, one for a failure; and
    `ROTA_METRICS=off` turns off metrics, not the log."""
    (_, broken_id), lines = _finished_lines_of_a_worker(
        sqlite_url, tmp_path, ["record", "broken"], [], {"ROTA_METRICS": "off"}
    )
    assert [e["run_id"] for e in lines] == [broken_id]
    [entry] = lines
    assert entry["outcome"] == "dead_lettered"
    assert entry["level"] == "info"
    assert "broken on purpose" not in json.dumps(entry)  # never the error text
