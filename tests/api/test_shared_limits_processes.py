"""Three real `rota server` processes over one PostgreSQL database share one request
rate limit (ADR 0036): hammered round-robin, together they accept the single limit
within a window, not three times it.

Deterministic by the limiter's own window: 10 requests per 10,000 s window, so the
window cannot end while the test runs; no other timing is assumed (readiness is a
condition polled with a deadline)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from rota.api.auth import mint_token

from ..helpers import stop_gracefully
from .conftest import ADMIN, SIGNING_KEY, api_settings
from .test_cli_e2e import REPO, free_port, wait_ready

SERVERS = 3
LIMIT = 10  # ROTA_API_RATE_BURST
RATE = 0.001  # per second: a window of LIMIT / RATE = 10,000 s
ROUNDS = 3 * LIMIT  # requests per server: each alone would accept LIMIT of them


def _start(db_url: str, port: int, log: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "ROTA_DATABASE_URL": db_url,
        "ROTA_ENV": "test",
        "ROTA_JWT_SECRET": SIGNING_KEY,
        "ROTA_API_RATE_PER_SECOND": str(RATE),
        "ROTA_API_RATE_BURST": str(LIMIT),
    }
    env.pop("ROTA_TRUSTED_PROXIES", None)
    command = [sys.executable, "-m", "rota", "server", "--port", str(port)]
    command += ["--no-worker", "--no-leader"]
    with log.open("ab") as out:
        return subprocess.Popen(command, env=env, cwd=REPO, stdout=out, stderr=out)


@pytest.mark.slow
def test_three_servers_accept_one_limit_not_three(pg_clean: str, tmp_path: Path) -> None:
    procs: list[subprocess.Popen[bytes]] = []
    urls: list[str] = []
    logs: list[Path] = []
    try:
        for n in range(SERVERS):
            port, log = free_port(), tmp_path / f"server-{n}.log"
            procs.append(_start(pg_clean, port, log))
            urls.append(f"http://127.0.0.1:{port}")
            logs.append(log)
        for url, proc, log in zip(urls, procs, logs, strict=True):
            wait_ready(url, proc, log)
        token = mint_token(api_settings(), "hammer", datetime.now(UTC), scopes=ADMIN)
        headers = {"Authorization": f"Bearer {token}"}
        answers: list[tuple[int, int, str | None]] = []
        with httpx.Client(timeout=10) as client:
            for _ in range(ROUNDS):
                for n, url in enumerate(urls):
                    answer = client.get(f"{url}/api/v1/jobs", headers=headers)
                    answers.append((n, answer.status_code, answer.headers.get("Retry-After")))
    finally:
        for proc in procs:
            stop_gracefully(proc)
    statuses = Counter(status for _, status, _ in answers)
    assert statuses == {200: LIMIT, 429: SERVERS * ROUNDS - LIMIT}, [
        log.read_text()[-1500:] for log in logs
    ]
    # The first LIMIT requests, spread over all three servers, were the ones accepted.
    assert [status for _, status, _ in answers[:LIMIT]] == [200] * LIMIT
    assert {n for n, _, _ in answers[:LIMIT]} == set(range(SERVERS))
    # Every refusal is the same 429, with a Retry-After inside the one long window.
    waits = {int(wait) for _, status, wait in answers if status == 429 and wait is not None}
    assert len([a for a in answers if a[1] == 429 and a[2] is not None]) == statuses[429]
    assert all(0 < wait <= LIMIT / RATE for wait in waits)
