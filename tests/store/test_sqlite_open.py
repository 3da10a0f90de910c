"""Processes that open one new SQLite file at once all get it in WAL mode: SQLite answers
"database is locked" at once, without its busy handler, to a connection that asks for
WAL while another is switching the file, and an open must not fail on that (the FastAPI
example's web service and worker start together)."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from rota.store.sqlite.dialect import switch_to_wal

pytestmark = [pytest.mark.timeout(60)]

TRIES = 100  # without the retry, about 8% of tries saw one connection refused


def test_connections_switching_a_new_file_to_wal_together_all_succeed(tmp_path: Path) -> None:
    refused: list[str] = []
    for trial in range(TRIES):
        path = tmp_path / f"new-{trial}.db"
        start = threading.Barrier(4)

        def open_it(path: Path = path, start: threading.Barrier = start) -> None:
            conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            try:
                conn.execute("PRAGMA busy_timeout = 5000")
                start.wait(timeout=10)
                switch_to_wal(conn)
                [(mode,)] = conn.execute("PRAGMA journal_mode").fetchall()
                assert mode == "wal"
            except (sqlite3.Error, AssertionError) as exc:
                refused.append(repr(exc))
            finally:
                conn.close()

        threads = [threading.Thread(target=open_it) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=20)
        assert not any(thread.is_alive() for thread in threads)
    assert refused == []
