"""The charts' rollup keeps a count per final state in columns named after the states
(migration 0028), and the read sums the failure states' columns in the database: the
columns it adds must be domain.charts.FAILURE_STATES in both dialects, wherever the read
adds them, and the minutes' count must fill each column from the state of its name."""

from __future__ import annotations

import re
from pathlib import Path

from rota.domain.charts import FAILURE_STATES
from rota.domain.states import RunState

SQL = Path(__file__).resolve().parents[2] / "src" / "rota" / "store" / "sql"
DIALECTS = ("sqlite", "postgres")


def _query(dialect: str, name: str) -> str:
    """The statement named ``name``, without its comments."""
    text = (SQL / dialect / "charts.sql").read_text()
    query = text.split(f"-- name: {name}\n", 1)[1].split("-- name: ", 1)[0]
    return "\n".join(line.split("--", 1)[0] for line in query.splitlines())


def test_the_reads_failure_states_are_the_domains() -> None:
    for dialect in DIALECTS:
        added = re.findall(r"\b(\w+(?: \+ \w+)+)\b", _query(dialect, "chart_read"))
        assert len(added) == 3, dialect  # one per level: minutes, quarters, hours
        for states in added:
            assert set(states.split(" + ")) == {s.value for s in FAILURE_STATES}, dialect


def test_each_state_column_counts_the_state_of_its_name() -> None:
    drawn = {RunState.SUCCEEDED.value} | {s.value for s in FAILURE_STATES}
    for dialect in DIALECTS:
        query = _query(dialect, "count_chart_minutes")
        columns = re.search(r"INSERT INTO rota_chart_minutes \(([^)]*)\)", query)
        assert columns is not None, dialect
        named = [c.strip() for c in columns[1].split(",")]
        # sum(CASE WHEN state = 'x' THEN 1 ELSE 0 END) or count(*) FILTER (WHERE state = 'x')
        counted = re.findall(
            r"(?:sum\(CASE WHEN|count\(\*\) FILTER \(WHERE) state = '(\w+)'", query
        )
        assert set(counted) == drawn, dialect
        # The counts follow count(*) (finished) in the order of their columns.
        finished = named.index("finished")
        assert named[finished + 1 : finished + 1 + len(counted)] == counted, dialect
