"""The CLI end to end against a live `rota server` (a subprocess on a free port, with a
temp SQLite database): create a job, trigger it, watch the run succeed, list it."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.helpers import REPO, wait_until

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(db: Path, port: int, log: Path, *extra: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "ROTA_DATABASE_URL": f"sqlite:///{db}", "ROTA_ENV": "development"}
    env.pop("ROTA_JWT_SECRET", None)
    command = [sys.executable, "-m", "rota", "server", "--port", str(port), *extra]
    with log.open("ab") as out:
        return subprocess.Popen(command, env=env, cwd=REPO, stdout=out, stderr=out)


def wait_ready(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    def answering() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"server exited: {log.read_text()[-2000:]}")
        try:
            return httpx.get(f"{url}/health/live", timeout=1).status_code == 200
        except httpx.TransportError:
            return False

    wait_until(answering, timeout=30, what="the server to answer")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    log = tmp_path / "server.log"
    proc = start_server(tmp_path / "rota.db", port, log, "--app", "rota.examples:app")
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, proc, log)
        yield url
    finally:
        proc.terminate()
        try:
            # uvicorn shuts down gracefully, then re-raises SIGTERM on itself.
            assert proc.wait(timeout=30) in (0, -signal.SIGTERM), log.read_text()[-2000:]
            assert "Application shutdown complete" in log.read_text()
        finally:
            if proc.poll() is None:
                proc.kill()


def rota(url: str, token: str | None, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ROTA_URL": url}
    if token:
        env["ROTA_TOKEN"] = token
    else:
        env.pop("ROTA_TOKEN", None)
    return subprocess.run(
        [sys.executable, "-m", "rota", *args],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_create_trigger_watch_and_list(server: str) -> None:
    token = rota(server, None, "token", "create").stdout.strip()
    assert token.count(".") == 2
    made = rota(
        server,
        token,
        "jobs",
        "create",
        "nightly-report",
        "--handler",
        "send-report",
        "--payload",
        '{"day": "2026-11-29"}',
        "--cron",
        "0 2 * * *",
        "--tz",
        "Europe/Berlin",
    )
    assert made.returncode == 0, made.stderr
    assert "nightly-report: created" in made.stdout
    triggered = rota(server, token, "jobs", "trigger", "nightly-report", "--wait", "30")
    assert triggered.returncode == 0, triggered.stderr
    run_id, state = triggered.stdout.split()
    assert state == "succeeded"
    listed = rota(server, token, "runs", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    [run] = json.loads(listed.stdout)["items"]
    assert (run["id"], run["state"], run["handler"]) == (int(run_id), "succeeded", "send-report")
    table = rota(server, token, "runs", "list", "--state", "succeeded")
    assert "succeeded" in table.stdout
    shown = json.loads(rota(server, token, "runs", "show", run_id, "--json").stdout)
    assert shown["attempts"][0]["outcome"] == "succeeded"
    logs = rota(server, token, "runs", "logs", run_id)
    assert "building report" in logs.stdout
    jobs = json.loads(rota(server, token, "jobs", "list", "--json").stdout)
    assert [j["name"] for j in jobs] == ["nightly-report"]
    # A job with a schedule is a schedule: the same commands under that name.
    paused = rota(server, token, "schedules", "pause", "nightly-report")
    assert paused.returncode == 0, paused.stderr
    schedules = json.loads(rota(server, token, "schedules", "list", "--json").stdout)
    assert [(j["name"], j["paused"]) for j in schedules] == [("nightly-report", True)]
    resumed = rota(server, token, "schedules", "resume", "nightly-report")
    assert resumed.returncode == 0, resumed.stderr
    workers = json.loads(rota(server, token, "workers", "list", "--json").stdout)
    assert len(workers) == 1
    assert workers[0]["state"] == "active"


def test_errors_are_one_line_and_non_zero(server: str, tmp_path: Path) -> None:
    token = rota(server, None, "token", "create", "--role", "viewer").stdout.strip()
    missing = rota(server, token, "jobs", "show", "nope")
    assert missing.returncode == 1
    assert missing.stderr.strip().splitlines() == [
        "rota: error: job 'nope' does not exist in namespace 'default' (HTTP 404)"
    ]
    denied = rota(server, token, "jobs", "create", "x", "--handler", "send-report")
    assert denied.returncode == 1
    assert "needs scope jobs:manage" in denied.stderr
    anonymous = rota(server, None, "runs", "list")
    assert anonymous.returncode == 1
    assert "bearer token" in anonymous.stderr
    unreachable = rota(f"http://127.0.0.1:{free_port()}", token, "runs", "list")
    assert unreachable.returncode == 3
    assert unreachable.stderr.startswith("rota: error: cannot reach the rota server")


def serve_once(env: dict[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
    """`rota server` that is expected to refuse to start (it would otherwise block)."""
    return subprocess.run(
        [sys.executable, "-m", "rota", "server", "--port", str(free_port()), *extra],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("rota_env", ["production", None], ids=["explicit", "unset"])
def test_production_refuses_to_start_without_a_key(tmp_path: Path, rota_env: str | None) -> None:
    """Production is the default: without ROTA_ENV there is no dev mode either."""
    env = {**os.environ, "ROTA_DATABASE_URL": f"sqlite:///{tmp_path}/r.db"}
    env.pop("ROTA_ENV", None)
    if rota_env is not None:
        env["ROTA_ENV"] = rota_env
    env.pop("ROTA_JWT_SECRET", None)
    result = subprocess.run(
        [sys.executable, "-m", "rota", "server", "--port", str(free_port())],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "production (the default; ROTA_ENV=development or --dev" in result.stderr
    assert "needs a signing key: set ROTA_JWT_SECRET" in result.stderr
    env["ROTA_JWT_SECRET"] = "rota-development-signing-key-do-not-use-in-production"
    public = subprocess.run(
        [sys.executable, "-m", "rota", "server", "--port", str(free_port())],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert public.returncode == 2
    assert "public development key" in public.stderr


@pytest.mark.parametrize("secret", [" " * 48, "a" * 48, "abababababababababababababababab"])
def test_a_low_entropy_secret_is_refused_without_echoing_it(tmp_path: Path, secret: str) -> None:
    env = {**os.environ, "ROTA_DATABASE_URL": f"sqlite:///{tmp_path}/r.db"}
    env.pop("ROTA_ENV", None)
    env["ROTA_JWT_SECRET"] = secret
    result = serve_once(env)
    assert result.returncode == 2
    assert "ROTA_JWT_SECRET has only" in result.stderr, result.stderr
    assert "distinct characters" in result.stderr
    if secret.strip():
        assert secret not in result.stdout + result.stderr


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10"])
def test_dev_mode_refuses_a_non_loopback_address(tmp_path: Path, host: str) -> None:
    env = {**os.environ, "ROTA_DATABASE_URL": f"sqlite:///{tmp_path}/r.db"}
    env.pop("ROTA_JWT_SECRET", None)
    for how, extra in (("env", ()), ("flag", ("--dev",))):
        env.pop("ROTA_ENV", None)
        if how == "env":
            env["ROTA_ENV"] = "development"
        result = serve_once(env, "--host", host, *extra)
        assert result.returncode == 2, (how, result.stderr)
        assert "development mode" in result.stderr
        assert "serves loopback only" in result.stderr


def test_workers_drain_and_resume(server: str) -> None:
    token = rota(server, None, "token", "create").stdout.strip()
    [worker] = json.loads(rota(server, token, "workers", "list", "--json").stdout)
    node = worker["node_id"]
    drained = rota(server, token, "workers", "drain", node)
    assert drained.stdout.strip() == f"{node}: draining", drained.stderr
    resumed = rota(server, token, "workers", "resume", node)
    assert resumed.stdout.strip() == f"{node}: active", resumed.stderr
    team = rota(server, None, "token", "create", "--namespace", "team-a").stdout.strip()
    refused = rota(server, team, "workers", "drain", node)
    assert refused.returncode != 0
    assert "whole cluster" in refused.stderr


def test_workflows_create_list_show_start(server: str, tmp_path: Path) -> None:
    token = rota(server, None, "token", "create").stdout.strip()
    definition = {
        "name": "cli-flow",
        "steps": [
            {"name": "report", "handler": "send-report"},
            {"name": "export", "handler": "export-csv", "after": ["report"]},
        ],
    }
    path = tmp_path / "flow.json"
    path.write_text(json.dumps(definition))
    made = rota(server, token, "workflows", "create", "--file", str(path))
    assert made.returncode == 0, made.stderr
    assert made.stdout.strip() == "default/cli-flow: version 1"
    listed = json.loads(rota(server, token, "workflows", "list", "--json").stdout)
    assert [(w["name"], w["version"]) for w in listed] == [("cli-flow", 1)]
    shown = rota(server, token, "workflows", "show", "cli-flow")
    assert shown.stdout.splitlines() == [
        "default/cli-flow (version 1)",
        "  report: step send-report",
        "  export: step export-csv  (after report)",
    ]
    started = rota(server, token, "workflows", "start", "cli-flow", "--payload", '{"day": "x"}')
    assert started.returncode == 0, started.stderr
    workflow_run_id = started.stdout.strip()

    def finished() -> bool:
        graph = rota(server, token, "workflows", "show", workflow_run_id, "--json")
        return bool(json.loads(graph.stdout)["state"] == "succeeded")

    wait_until(finished, timeout=30, what="the workflow run to succeed")
    runs = json.loads(rota(server, token, "workflows", "runs", "--json").stdout)
    assert [(r["id"], r["name"]) for r in runs] == [(int(workflow_run_id), "cli-flow")]

    path.write_text(
        json.dumps(
            {**definition, "steps": [{"name": "a", "handler": "send-report", "after": ["a"]}]}
        )
    )
    refused = rota(server, token, "workflows", "create", "--file", str(path))
    assert refused.returncode == 1
    assert "another step (not itself)" in refused.stderr
    path.write_text("{not json")
    garbled = rota(server, token, "workflows", "create", "--file", str(path))
    assert garbled.returncode == 2
    assert "is not a readable JSON file" in garbled.stderr
    missing = rota(server, token, "workflows", "start", "nothing")
    assert missing.stderr.strip() == (
        "rota: error: workflow 'nothing' does not exist in namespace 'default' (HTTP 404)"
    )


def test_the_startup_hint_names_the_servers_url(server: str, tmp_path: Path) -> None:
    # The fixture's server is on a free port, never the CLI's default.
    hint = f"export ROTA_TOKEN=$(.venv/bin/rota token create --url {server})"
    wait_until(lambda: hint in (tmp_path / "server.log").read_text(), what="the hint")


def test_token_create_fails_loudly_when_no_token_comes_back(tmp_path: Path) -> None:
    """`export ROTA_TOKEN=$(rota token create)` must not quietly export nothing: an
    answer without a token, or no server at all, is a non-zero exit and one line."""
    import http.server
    import threading

    class NoToken(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = b"{}"
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.HTTPServer(("127.0.0.1", 0), NoToken)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}"
        answered = rota(url, None, "token", "create")
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert answered.returncode != 0
    assert answered.stdout == ""
    assert answered.stderr.strip() == (
        f"rota: error: {url} answered without a token (is it a rota server in development mode?)"
    )
    nobody = rota(f"http://127.0.0.1:{free_port()}", None, "token", "create")
    assert nobody.returncode == 3
    assert nobody.stdout == ""
    assert len(nobody.stderr.strip().splitlines()) == 1
