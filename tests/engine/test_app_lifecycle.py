"""An App's lifecycle: ``with``/``async with`` close it, and a script that never closes
its App still ends without a word on stderr (psycopg_pool's workers once printed
"Task was destroyed but it is pending!" at every PostgreSQL script's exit).

The scripts are the README's own ("Use it"), run in a subprocess on each database."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import rota
from tests.conftest import fresh_database
from tests.readme import README_POSTGRES, blocks

pytestmark = pytest.mark.timeout(120)


def readme_block(first_line: str) -> str:
    found = [b.body for b in blocks() if b.body.startswith(first_line)]
    assert found, f"README.md has no block starting {first_line!r}"
    return found[0]


def run_script(folder: Path, script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=90,
    )


def readme_enqueue_quietly(folder: Path, database_url: str) -> None:
    tasks = readme_block("# tasks.py\n").replace("sqlite:///rota.db", database_url)
    (folder / "tasks.py").write_text(tasks)
    done = run_script(folder, readme_block("from tasks import app\n"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "pending"
    assert done.stderr == ""


def test_the_readme_enqueue_ends_quietly_on_sqlite(tmp_path: Path) -> None:
    readme_enqueue_quietly(tmp_path, f"sqlite:///{tmp_path / 'rota.db'}")


def test_the_readme_enqueue_ends_quietly_on_postgres(tmp_path: Path) -> None:
    with fresh_database("rota_lifecycle") as url:
        readme_enqueue_quietly(tmp_path, url)


def test_the_readme_postgres_transaction_snippet_ends_quietly(tmp_path: Path) -> None:
    """ "Exactly-once effects on PostgreSQL": enqueue on the caller's connection, then
    read the run back through the App, and end without closing it."""
    with fresh_database("rota_lifecycle") as url:
        shop = readme_block("# shop.py\n").replace(README_POSTGRES, url)
        (tmp_path / "shop.py").write_text(shop)
        migrated = run_script(tmp_path, "from shop import app\napp.list_runs()\napp.close()\n")
        assert migrated.returncode == 0, migrated.stderr  # rota's tables, as `db upgrade`
        done = run_script(tmp_path, readme_block("import psycopg\n\nfrom shop import app, url\n"))
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "pending"
        assert done.stderr == ""


def test_the_readme_scoped_app_ends_quietly(tmp_path: Path) -> None:
    done = run_script(tmp_path, readme_block("import rota\n\nwith rota.App("))
    assert (done.returncode, done.stdout.strip(), done.stderr) == (0, "pending", "")


def test_with_closes_the_app(db_url: str) -> None:
    with rota.App(db_url) as app:
        app.handler("noop")(lambda ctx, payload: None)
        app.enqueue("noop")
        stores = app._stores
        assert stores._sync is not None
    assert stores._sync is None  # the sync loop's store closed, its thread stopped


async def test_async_with_closes_the_app(db_url: str) -> None:
    async with rota.App(db_url) as app:
        app.handler("noop")(lambda ctx, payload: None)
        await app.enqueue_async("noop")
        stores = app._stores
        assert stores._stores  # this loop's store is open
    assert not stores._stores


def test_close_twice_is_harmless(db_url: str) -> None:
    app = rota.App(db_url)
    app.handler("noop")(lambda ctx, payload: None)
    app.enqueue("noop")
    app.close()
    app.close()
