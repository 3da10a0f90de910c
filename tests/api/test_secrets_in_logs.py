"""No secret and no payload value reaches the log, a problem response or the audit log,
even when requests fail with unhandled exceptions.

A real ``rota server`` (a subprocess, production mode, on PostgreSQL with a password in
its URL) serves an app whose payload validator has a bug (tests/apps/fragile_app.py):
it raises a plain RuntimeError for some payloads, so creating, triggering and updating a
job with such a payload are real unhandled exceptions inside request handling, with the
signing key, the bearer credential and the payload in the frames' locals. The test
forces several such 500s, with a JWT and with an API key, in both log formats, and
reads everything the process wrote.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest

from rota.api.auth import mint_token
from rota.api.settings import ApiSettings

from ..helpers import REPO, stop_gracefully
from .conftest import ADMIN
from .test_cli_e2e import free_port, wait_ready

pytestmark = pytest.mark.slow

SIGNING_KEY = "sk-" + uuid.uuid4().hex + uuid.uuid4().hex  # 67 bytes, random
DB_PASSWORD = "pw-" + uuid.uuid4().hex
MARKER = "payload-marker-" + uuid.uuid4().hex


def with_password(url: str, password: str) -> str:
    """The test database's URL with a password in it (trust auth ignores it)."""
    parts = urlsplit(url)
    netloc = f"{parts.username}:{password}@{parts.hostname}:{parts.port or 5432}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def start(db_url: str, port: int, log: Path, log_json: bool) -> subprocess.Popen[bytes]:
    env = {**os.environ, "ROTA_DATABASE_URL": db_url, "ROTA_JWT_SECRET": SIGNING_KEY}
    env.pop("ROTA_ENV", None)  # the production default
    command = [sys.executable, "-m", "rota", *(["--log-json"] if log_json else [])]
    command += ["server", "--port", str(port), "--app", "tests.apps.fragile_app:app"]
    with log.open("ab") as out:
        return subprocess.Popen(command, env=env, cwd=REPO, stdout=out, stderr=out)


def force_500s(url: str, token: str) -> tuple[str, list[str]]:
    """Three unhandled exceptions (two credentials, three routes). Returns the API key
    made on the way and the correlation ids of the failed calls."""
    jwt_auth = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=url, timeout=30) as client:
        made = client.post(
            "/api/v1/api-keys",
            json={"name": "leak-test", "scopes": list(ADMIN), "namespaces": ["*"]},
            headers=jwt_auth,
        )
        assert made.status_code == 201, made.text
        api_key = made.json()["key"]
        key_auth = {"Authorization": f"Bearer {api_key}"}
        job = f"job-{uuid.uuid4().hex[:8]}"
        fine = {"name": job, "handler": "note", "payload": {"text": "fine"}}
        assert client.post("/api/v1/jobs", json=fine, headers=jwt_auth).status_code == 201
        bad = {"text": f"explode {MARKER}"}
        calls = [
            ("POST", "/api/v1/jobs", {**fine, "name": f"{job}-2", "payload": bad}, jwt_auth),
            ("POST", f"/api/v1/jobs/{job}/trigger", {"payload": bad}, key_auth),
            ("PATCH", f"/api/v1/jobs/{job}", {"payload": bad}, key_auth),
        ]
        correlation_ids = []
        for method, path, body, headers in calls:
            cid = f"leak-{uuid.uuid4().hex[:12]}"
            answer = client.request(
                method, path, json=body, headers={**headers, "X-Correlation-ID": cid}
            )
            assert answer.status_code == 500, (method, path, answer.text)
            assert answer.headers["content-type"] == "application/problem+json"
            problem = answer.json()
            assert problem["correlation_id"] == cid
            assert problem["detail"] == "the server failed to handle this request"
            assert MARKER not in answer.text
            assert "RuntimeError" not in answer.text
            correlation_ids.append(cid)
        audit = client.get("/api/v1/audit", params={"limit": 200}, headers=jwt_auth)
        assert audit.status_code == 200
        failed = {e["correlation_id"]: e for e in audit.json()["items"]}
        for cid in correlation_ids:
            assert (failed[cid]["status"], failed[cid]["outcome"]) == (500, "failed")
            assert failed[cid]["namespace"] == "default"
        for secret in (MARKER, SIGNING_KEY, api_key, token):
            assert secret not in audit.text
    return api_key, correlation_ids


@pytest.mark.parametrize("log_json", [False, True], ids=["console", "json"])
def test_unhandled_errors_log_tracebacks_but_no_secret(
    pg_url: str, tmp_path: Path, log_json: bool
) -> None:
    port = free_port()
    log = tmp_path / "server.log"
    proc = start(with_password(pg_url, DB_PASSWORD), port, log, log_json)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, proc, log)
        settings = ApiSettings(signing_key=SIGNING_KEY)
        token = mint_token(settings, "leak-tester", datetime.now(UTC), scopes=ADMIN)
        api_key, correlation_ids = force_500s(url, token)
    finally:
        stop_gracefully(proc)
    output = log.read_text()
    secrets = {
        "signing key": SIGNING_KEY,
        "database password": DB_PASSWORD,
        "API key": api_key,
        "API key secret": api_key[len("rota_") + 17 :],
        "JWT": token,
        "JWT signature": token.rsplit(".", 1)[1],
        "payload value": MARKER,
    }
    leaked = [name for name, value in secrets.items() if value in output]
    assert leaked == [], f"{leaked} in the server's output"
    assert "**********@127.0.0.1" in output  # the banner names the database, redacted
    if log_json:
        events = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
        errors = [e for e in events if e.get("event") == "unhandled error"]
        assert sorted(e["correlation_id"] for e in errors) == sorted(correlation_ids)
        for error in errors:
            [exception] = [x for x in error["exception"] if x["exc_type"] == "RuntimeError"]
            assert exception["exc_value"] == "the note index is corrupt"
            assert any(f["name"] == "buggy" for f in exception["frames"])
            assert all("locals" not in f for f in exception["frames"])
    else:
        assert output.count("unhandled error") == len(correlation_ids)
        assert output.count("Traceback") >= len(correlation_ids)
        assert output.count("RuntimeError: the note index is corrupt") == len(correlation_ids)
        assert "fragile_app.py" in output
        assert "locals" not in output


def test_a_refused_statement_does_not_quote_its_data(pg_url: str) -> None:
    """PostgreSQL's DETAIL and CONTEXT lines quote the value it refused; the store's
    error keeps the first line and SQLSTATE, and does not chain the driver's error
    (whose message a traceback would print)."""
    import psycopg

    from rota.errors import StoreError
    from rota.store.postgres.base import _translated

    with pytest.raises(StoreError) as refused, _translated(), psycopg.connect(pg_url) as conn:
        conn.execute("SELECT %s::jsonb", [f'{{"token": "{MARKER}", "x": nope}}'])
    assert MARKER not in str(refused.value)
    assert "invalid input syntax for type json (22P02)" in str(refused.value)
    assert refused.value.__cause__ is None
    assert refused.value.__suppress_context__


@pytest.mark.parametrize(
    "url",
    [
        f"mysql://u:{DB_PASSWORD}@h/db",
        f"postgresql://u:{DB_PASSWORD}@127.0.0.1:1/db",
        f"postgresql://u@127.0.0.1:1/db?password={DB_PASSWORD}",
    ],
    ids=["unsupported", "unreachable", "password in the query"],
)
def test_cli_errors_hide_the_database_password(url: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "rota", "db", "status", "--db", url],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode in (2, 3)
    assert result.stderr.startswith("rota: error: "), result.stderr
    assert "**********" in result.stderr
    assert DB_PASSWORD not in result.stdout + result.stderr


def test_redact_url_keeps_what_is_not_secret() -> None:
    from rota.redact import redact_url

    assert redact_url("sqlite:///rota.db") == "sqlite:///rota.db"
    assert redact_url("postgresql://u@h/db") == "postgresql://u@h/db"
    assert redact_url("postgresql://u:p%40ss@h:5433/db") == "postgresql://u:**********@h:5433/db"
    assert redact_url("postgresql://u:p@[::1]/db") == "postgresql://u:**********@[::1]/db"
    assert redact_url("postgresql://u:p@h:notaport/db") == "**********"
