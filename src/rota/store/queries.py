"""Named SQL: each dialect keeps its queries by concept in ``sql/<dialect>/*.sql``
(runs, claim, leases, reading, jobs, leader, workers, access) under ``-- name: <query>``
headers, and its migrations in ``migrations/<dialect>/NNNN_*.sql``.

Both dialects define exactly the same names in the same files, since one SqlStore runs
them all; tests/test_query_names.py holds them to it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

_HEADER = re.compile(r"^-- name: ([a-z_]+)\s*$", re.MULTILINE)

# Queries loaded once per value of a flag, the flag written into each as a constant:
# query -> (flag, the name of the copy where it is true; the query's own name has it
# false). PostgreSQL plans a prepared statement once for any parameter values (a
# generic plan), and prices every branch a flag it cannot see might take. The
# completion's generic plan so kept the circuit breakers' subqueries that the common
# call (no breaker rules) never runs, looked dearer than a plan made for the values,
# and the server planned the completion anew on every call: 0.6 ms of a concurrency-8
# drain's 1.3 ms of server CPU per claim (docs/benchmarks-by-hand.md, 2026-12-06).
PLANNED_PER_FLAG = {"complete": ("judge_breakers", "complete_judging")}


@cache
def load_queries(dialect: str) -> dict[str, str]:
    """Every named query of ``dialect``, from all its concept files."""
    queries: dict[str, str] = {}
    for concept, names in queries_by_concept(dialect).items():
        for name, body in names.items():
            if name in queries:
                raise RuntimeError(f"query {name!r} is defined twice ({dialect}, {concept})")
            queries[name] = body
    return queries


@cache
def queries_by_concept(dialect: str) -> dict[str, dict[str, str]]:
    """``{concept: {name: sql}}``: the concept is the file's stem (``claim.sql``)."""
    folder = resources.files("rota.store").joinpath(f"sql/{dialect}")
    found: dict[str, dict[str, str]] = {}
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".sql"):
            continue
        parts = _HEADER.split(entry.read_text())
        # parts = [preamble, name1, body1, name2, body2, ...]
        queries: dict[str, str] = {}
        for name, body in zip(parts[1::2], parts[2::2], strict=True):
            if name in queries:
                raise RuntimeError(f"query {name!r} is defined twice in {dialect}/{entry.name}")
            queries[name] = body.strip().rstrip(";")
            if name in PLANNED_PER_FLAG:
                flag, flagged = PLANNED_PER_FLAG[name]
                queries[flagged] = with_constant(queries[name], flag, True)
                queries[name] = with_constant(queries[name], flag, False)
        found[entry.name.removesuffix(".sql")] = queries
    return found


def with_constant(sql: str, flag: str, value: bool) -> str:
    """``sql`` with every placeholder of ``flag`` (``%(flag)s::boolean`` for psycopg,
    ``:flag`` for sqlite3) written as the constant ``value``."""
    placeholder = re.compile(rf"%\({flag}\)s(?:::boolean)?|:{flag}\b")
    written, count = placeholder.subn("TRUE" if value else "FALSE", sql)
    if not count:
        raise RuntimeError(f"query planned per {flag!r} never reads it")
    return written


def as_sent(sql: str) -> str:
    """``sql`` as it is sent to PostgreSQL: its first line (the comment that names it in
    the server's log and in pg_stat_activity) and its code, without the other comment
    lines or indentation. psycopg parses a statement's text again on every call unless
    it is at most 4,096 characters long (its cache of parsed queries): the completion's
    7,554, half of them comments, were parsed on every call, about a tenth of a
    concurrency-8 worker's CPU (py-spy, docs/benchmarks-by-hand.md, 2026-12-06)."""
    first, *rest = sql.splitlines()
    code = (line.strip() for line in rest)
    return "\n".join([first, *(line for line in code if line and not line.startswith("--"))])


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
