"""PostgreSQL plumbing for the bench: fresh databases, server facts, cheap probes.

Everything here uses plain sync psycopg on the admin database; the systems under test
open their own connections with their own drivers.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import psycopg

ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
# Server settings that change what the numbers mean; they go into the report verbatim.
REPORTED_SETTINGS = (
    "shared_buffers",
    "synchronous_commit",
    "fsync",
    "autovacuum",
    "max_connections",
    "max_wal_size",
)


@dataclass(frozen=True)
class ServerInfo:
    version: str
    settings: dict[str, str]


def database_url(admin_url: str, name: str) -> str:
    """The admin URL with its database name swapped for ``name``."""
    base, _, _ = admin_url.rpartition("/")
    return f"{base}/{name}"


def server_info(admin_url: str) -> ServerInfo:
    with psycopg.connect(admin_url, autocommit=True, connect_timeout=5) as conn:
        row = conn.execute("SHOW server_version").fetchone()
        settings = {
            name: str(value)
            for name, value in conn.execute(
                "SELECT name, current_setting(name) FROM pg_settings WHERE name = ANY(%s)",
                (list(REPORTED_SETTINGS),),
            ).fetchall()
        }
    return ServerInfo(str(row[0]) if row else "?", settings)


AUTOVACUUM_SOURCE_SQL = (
    "SELECT setting, sourcefile LIKE '%%postgresql.auto.conf' FROM pg_settings"
    " WHERE name = 'autovacuum'"
)


@contextlib.contextmanager
def stock_autovacuum(admin_url: str, wait_s: float = 10.0) -> Iterator[str]:
    """Autovacuum on for the span, as a stock server has it (issue 15: no decay "with
    autovacuum at its stock settings, not only the leader's VACUUM"). A server that has
    it off gets ``ALTER SYSTEM SET autovacuum = on`` and a reload, and its own setting
    back afterwards, even after a failure. Yields what the server had ("on"/"off")."""
    with psycopg.connect(admin_url, autocommit=True, connect_timeout=5) as conn:
        row = conn.execute(AUTOVACUUM_SOURCE_SQL).fetchone()
        had, set_by_alter_system = (str(row[0]), bool(row[1])) if row else ("on", False)
        if had == "on":
            yield had
            return
        conn.execute("ALTER SYSTEM SET autovacuum = on")
        conn.execute("SELECT pg_reload_conf()")
        try:
            _wait_for_autovacuum(admin_url, "on", wait_s)
            yield had
        finally:
            # Back as it was: an ALTER SYSTEM value is set again, a file's value is
            # uncovered by resetting ours.
            restore = "SET autovacuum = off" if set_by_alter_system else "RESET autovacuum"
            conn.execute(f"ALTER SYSTEM {restore}")
            conn.execute("SELECT pg_reload_conf()")
            _wait_for_autovacuum(admin_url, had, wait_s)


def _wait_for_autovacuum(admin_url: str, setting: str, wait_s: float) -> None:
    """A reload is asynchronous: wait until a new session sees ``setting``."""
    deadline = time.monotonic() + wait_s
    while True:
        with psycopg.connect(admin_url, autocommit=True, connect_timeout=5) as conn:
            row = conn.execute("SHOW autovacuum").fetchone()
        if row and row[0] == setting:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"autovacuum still not {setting} {wait_s:g} s after a reload")
        time.sleep(0.1)


@contextlib.contextmanager
def fresh_database(admin_url: str, label: str) -> Iterator[str]:
    """Create an empty database, yield its URL, and drop it afterwards (even after a
    failure: WITH (FORCE) disconnects any worker a timed-out scenario left behind)."""
    # The creator's pid in the name: a later run drops it only once that process is gone.
    name = f"bench_{label}_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True, connect_timeout=5) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield database_url(admin_url, name)
    finally:
        with psycopg.connect(admin_url, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def drop_stale_databases(admin_url: str) -> list[str]:
    """Drop databases an earlier, killed bench run left behind: those whose creating
    process is gone and that nobody is connected to. Another bench running beside this
    one (a second session, a helper's A/B) keeps its databases."""
    with psycopg.connect(admin_url, autocommit=True, connect_timeout=5) as conn:
        names = [
            row[0]
            for row in conn.execute(
                "SELECT datname FROM pg_database d WHERE datname LIKE 'bench\\_%'"
                " AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a"
                " WHERE a.datname = d.datname)"
            ).fetchall()
            if not _creator_alive(row[0])
        ]
        for name in names:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    return names


def _creator_alive(name: str) -> bool:
    """Whether the process named in ``bench_<label>_<pid>_<hex>`` still runs here."""
    match = re.fullmatch(r"bench_\w+?_(\d+)_[0-9a-f]{8}", name)
    if match is None:
        return False
    try:
        os.kill(int(match.group(1)), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# The backends of the database under test, but not the one asking: other databases on
# the same server (other test runs, the other systems' leftovers) are not its cost.
BACKENDS_SQL = (
    "SELECT pid FROM pg_stat_activity"
    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
)


class Probe:
    """One sync connection that asks a single cheap question, over and over."""

    def __init__(self, url: str) -> None:
        self._conn = psycopg.connect(url, autocommit=True, connect_timeout=5)

    def scalar(self, sql: str, params: tuple[object, ...] | None = None) -> int:
        row = self._conn.execute(sql, params).fetchone()
        return int(row[0]) if row and row[0] is not None else 0

    def execute(self, sql: str) -> None:
        self._conn.execute(sql)

    def row(self, sql: str) -> tuple[object, ...] | None:
        return self._conn.execute(sql).fetchone()

    def rows(self, sql: str, params: tuple[object, ...] | None = None) -> list[tuple[object, ...]]:
        return list(self._conn.execute(sql, params).fetchall())

    def backend_pids(self) -> list[int]:
        """The backends of this database but this one (what bench.cpu.ServerCpu counts)."""
        return [int(str(row[0])) for row in self.rows(BACKENDS_SQL)]

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Probe:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
