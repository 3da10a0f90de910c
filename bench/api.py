"""(h) Issue 5: the HTTP API on a big runs table, and the trigger endpoint's rate.

For each store (PostgreSQL, SQLite): a fresh database with ``cfg.rows_on(store)`` runs
(bench.api_load), then ``rota server --no-worker --no-leader`` as a subprocess on a free
loopback port, with ROTA_ENV=development (for a dev token) and the per-subject rate limit
raised far above what the bench sends (ROTA_API_RATE_PER_SECOND / ROTA_API_RATE_BURST),
so the limiter never answers 429 in place of the query being measured.

- list: ``cfg.api_requests`` sequential GETs per filter on one keep-alive httpx client,
  after WARMUP requests that are not counted; plus a walk of CURSOR_PAGES pages down
  the keyset cursor.
- trigger: one manual job, then TRIGGER_CLIENTS concurrent async clients POST its
  trigger for ``cfg.trigger_seconds``; requests/s = 202 answers / elapsed.

The clients run in the bench's parent process, on the same 2 CPUs as the server and
the database.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from bench import api_load, pg, rota_runner
from bench.config import BenchConfig
from bench.procs import ScenarioFailed
from bench.results import Results, percentile, run_async

ROTA_CLI = Path(sys.executable).with_name("rota")
RATE_ENV = {"ROTA_API_RATE_PER_SECOND": "1000000", "ROTA_API_RATE_BURST": "1000000"}
WARMUP = 20
CURSOR_PAGES = 20
TRIGGER_CLIENTS = 4
START_TIMEOUT_S = 60.0
REQUEST_TIMEOUT_S = 10.0
LOAD_TIMEOUT_S = 300.0
FILTERS = {
    "state=dead_lettered&limit=50": {"state": "dead_lettered", "limit": 50},
    "handler=export-csv&limit=50": {"handler": "export-csv", "limit": 50},
    "queue=etl&state=pending&limit=50": {"queue": "etl", "state": "pending", "limit": 50},
}
CURSOR_WALK = "state=dead_lettered&limit=50&cursor=... (walk from page 1)"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def rota_server(url: str, log_path: Path) -> Iterator[tuple[str, str]]:
    """``rota server`` on a free port; yields (base URL, admin token); always stopped."""
    port = _free_port()
    env = {**os.environ, "ROTA_ENV": "development", **RATE_ENV}
    command = [str(ROTA_CLI), "server", "--db", url, "--app", "rota.examples:app"]
    command += ["--no-worker", "--no-leader", "--port", str(port)]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise ScenarioFailed(f"rota server exited: {log_path.read_text()[-2000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{base}/health/live", timeout=1).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise ScenarioFailed(f"rota server not up after {START_TIMEOUT_S:.0f} s")
            time.sleep(0.2)
        answer = httpx.post(f"{base}/dev/token", json={"role": "admin"}, timeout=10)
        answer.raise_for_status()
        yield base, answer.json()["access_token"]
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def _ms_summary(samples: list[float]) -> dict[str, Any]:
    return {
        "requests": len(samples),
        "p50_ms": round(percentile(samples, 50), 2),
        "p99_ms": round(percentile(samples, 99), 2),
        "max_ms": round(max(samples), 2),
    }


def _timed_get(client: httpx.Client, params: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    answer = client.get("/api/v1/runs", params=params)
    elapsed = (time.perf_counter() - started) * 1000
    if answer.status_code != 200:
        raise ScenarioFailed(f"GET /api/v1/runs {params}: {answer.status_code} {answer.text[:300]}")
    return elapsed, answer.json()


def measure_lists(base: str, token: str, requests: int, timeout_s: float) -> dict[str, Any]:
    """Sequential GETs per filter, then a walk down the cursor; all within timeout_s."""
    deadline = time.monotonic() + timeout_s
    out: dict[str, Any] = {}
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base, headers=headers, timeout=REQUEST_TIMEOUT_S) as client:
        for label, params in FILTERS.items():
            for _ in range(WARMUP):
                _timed_get(client, params)
            samples, items = [], 0
            for _ in range(requests):
                elapsed, body = _timed_get(client, params)
                samples.append(elapsed)
                items = len(body["items"])
                if time.monotonic() > deadline:
                    raise ScenarioFailed(f"list requests not done after {timeout_s:.0f} s")
            out[label] = {**_ms_summary(samples), "items": items}
        params: dict[str, Any] = dict(FILTERS["state=dead_lettered&limit=50"])
        pages: list[float] = []
        for _ in range(CURSOR_PAGES):
            elapsed, body = _timed_get(client, params)
            pages.append(elapsed)
            if not body.get("next_cursor"):
                break
            params["cursor"] = body["next_cursor"]
        out[CURSOR_WALK] = {**_ms_summary(pages), "items": 50}
    return out


async def _trigger_client(
    client: httpx.AsyncClient, path: str, until: float, latencies: list[float]
) -> int:
    errors = 0
    while time.monotonic() < until:
        started = time.perf_counter()
        answer = await client.post(path, json={})
        if answer.status_code == 202:
            latencies.append((time.perf_counter() - started) * 1000)
        else:
            errors += 1
            if errors > 100:
                raise ScenarioFailed(f"trigger: {answer.status_code} {answer.text[:300]}")
    return errors


async def measure_trigger(base: str, token: str, seconds: float) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}"}
    limits = httpx.Limits(max_connections=TRIGGER_CLIENTS)
    async with httpx.AsyncClient(
        base_url=base, headers=headers, timeout=REQUEST_TIMEOUT_S, limits=limits
    ) as client:
        job = {"name": "bench-trigger", "handler": "export-csv", "payload": {"rows": 1}}
        created = await client.post("/api/v1/jobs", json=job)
        if created.status_code != 201:
            raise ScenarioFailed(f"POST /api/v1/jobs: {created.status_code} {created.text[:300]}")
        path = "/api/v1/jobs/bench-trigger/trigger"
        for _ in range(WARMUP):
            await client.post(path, json={})
        latencies: list[float] = []
        started = time.monotonic()
        errors = await asyncio.gather(
            *(
                _trigger_client(client, path, started + seconds, latencies)
                for _ in range(TRIGGER_CLIENTS)
            )
        )
        elapsed = time.monotonic() - started
    return {
        "requests_per_s": round(len(latencies) / elapsed, 1),
        "seconds": round(elapsed, 2),
        "clients": TRIGGER_CLIENTS,
        "errors": sum(errors),
        **_ms_summary(latencies),
    }


@contextlib.contextmanager
def _loaded_store(cfg: BenchConfig, store: str) -> Iterator[str]:
    """A database of the given kind holding ``cfg.rows_on(store)`` runs; yields its URL."""
    if store == "PostgreSQL":
        with pg.fresh_database(cfg.admin_url, "api") as url:
            run_async(rota_runner.install(url), LOAD_TIMEOUT_S)
            api_load.load_postgres(url, cfg.rows_on(store))
            yield url
        return
    with tempfile.TemporaryDirectory(prefix="rota-bench-api-") as tmp:
        path = Path(tmp) / "api.db"
        url = f"sqlite:///{path}"
        run_async(rota_runner.install(url), LOAD_TIMEOUT_S)
        api_load.load_sqlite(str(path), cfg.rows_on(store), time.time())
        yield url


def api_on(cfg: BenchConfig, results: Results, store: str) -> None:
    system = f"rota server ({store})"
    variant = f"{cfg.rows_on(store):,} runs"

    def measure() -> dict[str, Any]:
        started = time.monotonic()
        with _loaded_store(cfg, store) as url:
            load_s = time.monotonic() - started
            log = Path(tempfile.gettempdir()) / "rota-bench" / f"server-{store}.log"
            log.parent.mkdir(parents=True, exist_ok=True)
            with rota_server(url, log) as (base, token):
                lists = measure_lists(base, token, cfg.api_requests, cfg.scenario_timeout_s)
                trigger = run_async(
                    measure_trigger(base, token, cfg.trigger_seconds), cfg.trigger_seconds + 60
                )
        return {"load_s": round(load_s, 1), "lists": lists, "trigger": trigger}

    outcome = results.attempt("api", system, variant, measure)
    if outcome is not None:
        worst_p99 = max(v["p99_ms"] for v in outcome["lists"].values())
        results.add("api", system, variant, worst_p99, rows=cfg.rows_on(store), **outcome)


def api(cfg: BenchConfig, results: Results) -> None:
    for store in ("PostgreSQL", "SQLite"):
        api_on(cfg, results, store)
