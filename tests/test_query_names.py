"""Both dialects define exactly the same named queries, in the same concept files: one
SqlStore runs them all (store/queries.py promises it)."""

from __future__ import annotations

import re

import pytest

from rota.store.queries import load_queries, queries_by_concept

DIALECTS = ("sqlite", "postgres")


def test_sqlite_and_postgres_share_their_query_names() -> None:
    assert set(load_queries("sqlite")) == set(load_queries("postgres"))


def test_each_concept_file_holds_the_same_names_in_both_dialects() -> None:
    sqlite, postgres = (queries_by_concept(d) for d in DIALECTS)
    assert sqlite.keys() == postgres.keys()
    for concept in sqlite:
        assert set(sqlite[concept]) == set(postgres[concept]), concept


@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_query_has_a_body(dialect: str) -> None:
    assert all(body.strip() for body in load_queries(dialect).values())


def test_each_postgres_placeholder_travels_in_one_format() -> None:
    """Arrays are sent binary (%(name)b), scalars as text (%(name)s); psycopg refuses a
    placeholder written both ways in one query, comments included (they are sent)."""
    mixed = {}
    for name, body in load_queries("postgres").items():
        formats: dict[str, set[str]] = {}
        for param, fmt in re.findall(r"%\((\w+)\)([sb])", body):
            formats.setdefault(param, set()).add(fmt)
        mixed.update({f"{name}.{p}": f for p, f in formats.items() if len(f) > 1})
    assert mixed == {}


def test_every_postgres_query_as_sent_fits_psycopgs_cache_of_parsed_queries() -> None:
    """psycopg parses a longer statement's text again on every call (queries.py
    as_sent): the completion did, a tenth of a small-batch worker's CPU."""
    from psycopg._queries import MAX_CACHED_STATEMENT_LENGTH

    from rota.store.postgres.session import Q

    too_long = {name: len(sql) for name, sql in Q.items() if len(sql) > MAX_CACHED_STATEMENT_LENGTH}
    assert too_long == {}


def test_a_query_is_sent_with_its_first_line_and_its_code_only() -> None:
    from rota.store.queries import as_sent

    sql = "-- Names the query.\n-- More about it.\nSELECT 1\n    -- why\n    FROM t  -- kept\n\n"
    assert as_sent(sql) == "-- Names the query.\nSELECT 1\nFROM t  -- kept"
