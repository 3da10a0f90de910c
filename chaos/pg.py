"""The PostgreSQL server as the chaos suite sees it: databases of our own, the backends
to terminate (only ours), and a restart of the whole Debian cluster."""

from __future__ import annotations

import os
import random
import subprocess
import time
import uuid

import psycopg

ADMIN_URL = os.environ.get("ROTA_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")
# Connections the suite itself opens carry this name, so fault injection spares them.
APPLICATION_NAME = "rota-chaos"


def with_database(url: str, name: str) -> str:
    base, _, _ = url.rpartition("/")
    return f"{base}/{name}"


def admin() -> psycopg.Connection:
    return psycopg.connect(
        ADMIN_URL, autocommit=True, connect_timeout=5, application_name=APPLICATION_NAME
    )


def create_database() -> str:
    """A fresh database ``rota_chaos_<random>``; returns its URL."""
    name = f"rota_chaos_{uuid.uuid4().hex[:10]}"
    with admin() as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return with_database(ADMIN_URL, name)


def drop_database(url: str) -> None:
    name = url.rpartition("/")[2]
    if not name.startswith("rota_chaos_"):
        raise ValueError(f"refusing to drop {name!r}: not a chaos database")
    with admin() as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def terminate_backends(url: str, count: int, rng: random.Random) -> int:
    """Terminate up to ``count`` random backends of ``url``'s database (never another
    database's, never the suite's own connections). Returns how many were ended."""
    name = url.rpartition("/")[2]
    with admin() as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()"
            " AND application_name <> %s AND backend_type = 'client backend'",
            (name, APPLICATION_NAME),
        ).fetchall()
        pids = [row[0] for row in rows]
        chosen = rng.sample(pids, min(count, len(pids)))
        ended = 0
        for pid in chosen:
            row = conn.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()
            ended += bool(row and row[0])
        return ended


def cluster_version() -> str:
    """The version of the Debian cluster serving port 5432 (``pg_lsclusters``)."""
    out = subprocess.run(
        ["pg_lsclusters", "--no-header"], capture_output=True, text=True, check=True, timeout=30
    ).stdout
    for line in out.splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[1] == "main" and fields[2] == "5432":
            return fields[0]
    raise RuntimeError(f"no 'main' cluster on port 5432 in pg_lsclusters: {out!r}")


def restart_server(timeout: float = 60.0) -> float:
    """Restart the server (fast shutdown: every connection is cut) and wait until it
    answers again. Returns the seconds it was away."""
    version = cluster_version()
    started = time.monotonic()
    subprocess.run(
        ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "restart", "-m", "fast"],
        check=True,
        timeout=timeout,
        capture_output=True,
    )
    deadline = started + timeout
    while time.monotonic() < deadline:
        try:
            with admin() as conn:
                conn.execute("SELECT 1")
            return time.monotonic() - started
        except psycopg.OperationalError:
            time.sleep(0.05)
    raise RuntimeError(f"PostgreSQL did not answer within {timeout} s of a restart")
