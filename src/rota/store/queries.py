"""Named SQL: each dialect keeps its queries in ``sql/<dialect>/queries.sql`` under
``-- name: <query>`` headers, and its migrations in ``migrations/<dialect>/NNNN_*.sql``.

Both dialects use the same query names, so the adapters read alike and a reviewer can
hold the two files side by side. tests/test_query_names.py holds them to it; the names
not shared yet are listed there (NOT_YET_SHARED) until issue 10's one SqlStore.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

_HEADER = re.compile(r"^-- name: ([a-z_]+)\s*$", re.MULTILINE)


@cache
def load_queries(dialect: str) -> dict[str, str]:
    text = resources.files("rota.store").joinpath(f"sql/{dialect}/queries.sql").read_text()
    parts = _HEADER.split(text)
    # parts = [preamble, name1, body1, name2, body2, ...]
    queries: dict[str, str] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        if name in queries:
            raise RuntimeError(f"query {name!r} is defined twice in {dialect}/queries.sql")
        queries[name] = body.strip().rstrip(";")
    return queries


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


@cache
def load_migrations(dialect: str) -> tuple[Migration, ...]:
    folder = resources.files("rota.store").joinpath(f"migrations/{dialect}")
    found = []
    for entry in folder.iterdir():
        match = re.fullmatch(r"(\d{4})_([a-z0-9_]+)\.sql", entry.name)
        if match:
            found.append(Migration(int(match[1]), match[2], entry.read_text()))
    found.sort(key=lambda m: m.version)
    expected = list(range(1, len(found) + 1))
    if [m.version for m in found] != expected:
        raise RuntimeError(f"{dialect} migrations must be numbered 1..N without gaps")
    return tuple(found)


def latest_version(dialect: str) -> int:
    return len(load_migrations(dialect))
