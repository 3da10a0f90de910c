"""The charts' read names the failure states in SQL (to sum them in the database); they
must be domain.charts.FAILURE_STATES in both dialects, wherever the read names them."""

from __future__ import annotations

import re
from pathlib import Path

from rota.domain.charts import FAILURE_STATES

SQL = Path(__file__).resolve().parents[2] / "src" / "rota" / "store" / "sql"


def test_the_reads_failure_states_are_the_domains() -> None:
    for dialect in ("sqlite", "postgres"):
        text = (SQL / dialect / "charts.sql").read_text()
        listed = re.findall(r"state IN \(([^)]*)\)", text)
        assert len(listed) == 2, dialect  # chart_read: the keys' totals and the bars
        for states in listed:
            named = {s.strip().strip("'") for s in states.replace("\n", " ").split(",")}
            assert named == {s.value for s in FAILURE_STATES}, dialect
