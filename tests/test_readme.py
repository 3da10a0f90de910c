"""Every code block of README.md runs as printed, in order, in one fresh folder, against
a real server, real workers and a fresh PostgreSQL database (tests/readme.py says how
each block is run and the three things that differ from a reader's terminal)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.api.test_cli_e2e import free_port
from tests.conftest import fresh_database
from tests.readme import Reader, blocks

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture
def fresh_postgres() -> Iterator[str]:
    """An empty database: the README's `rota db upgrade` is what makes rota's tables."""
    with fresh_database("rota_readme") as url:
        yield url


def test_every_block_is_run_or_skipped_with_a_reason():
    found = blocks()
    assert len(found) > 20, "the README's blocks were not found"
    for block in found:
        if block.mark == "skip":
            assert block.why, f"{block.name}: a skipped block says why"
        else:
            assert block.lang in ("python", "sh"), f"{block.name}: mark it skip (and why)"


def test_the_readme_runs_as_printed(tmp_path: Path, fresh_postgres: str):
    reader = Reader(tmp_path, free_port(), fresh_postgres)
    ran = []
    try:
        for block in blocks():
            if block.mark != "skip":
                reader.run(block)
                ran.append(block)
    except BaseException:
        print(reader.logs())  # the server's and workers' last lines, beside the failure
        raise
    finally:
        reader.stop()
    outputs = dict((block.body, out) for block, out in reader.outputs)
    trigger = next(body for body in outputs if "jobs trigger nightly --wait 30" in body)
    assert any(line.endswith(" succeeded") for line in outputs[trigger].splitlines())
    assert (tmp_path / "tasks.py").read_text().count("@app.handler(") == 7
