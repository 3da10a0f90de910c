"""Databases as an older rota left them, for the upgrade tests: a database of its own
beside the session's, migrated up to a version and no further, each step recorded as
rota records it."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

from rota.store.queries import load_migrations
from rota.store.sqlite.codec import statements
from rota.store.sqlite.dialect import path_from_url


@contextmanager
def postgres_database(pg_url: str, label: str) -> Iterator[str]:
    """An empty database on ``pg_url``'s server; dropped afterwards."""
    name = f"rota_{label}_{uuid.uuid4().hex[:8]}"
    url = f"{pg_url.rpartition('/')[0]}/{name}"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield url
    finally:
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def migrate_postgres(conn: psycopg.Connection[object], until: int) -> None:
    """Apply PostgreSQL's migrations before version ``until``."""
    conn.execute(
        "CREATE TABLE rota_schema_migrations (version integer PRIMARY KEY,"
        " name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
    )
    for migration in load_migrations("postgres")[: until - 1]:
        conn.execute(migration.sql.encode())
        conn.execute(
            "INSERT INTO rota_schema_migrations (version, name) VALUES (%s, %s)",
            (migration.version, migration.name),
        )


def migrate_sqlite(url: str, until: int) -> sqlite3.Connection:
    """Apply SQLite's migrations before version ``until``; the open connection."""
    conn = sqlite3.connect(path_from_url(url))
    conn.execute(
        "CREATE TABLE rota_schema_migrations (version INTEGER PRIMARY KEY,"
        " name TEXT NOT NULL, applied_at REAL NOT NULL DEFAULT 0)"
    )
    for migration in load_migrations("sqlite")[: until - 1]:
        for statement in statements(migration.sql):
            conn.execute(statement)
        conn.execute(
            "INSERT INTO rota_schema_migrations (version, name) VALUES (?, ?)",
            (migration.version, migration.name),
        )
    return conn
