"""rota.contrib.django in a real Django project (the shop, pytest-django), on SQLite and
on PostgreSQL: an enqueue inside a rolled-back atomic() leaves no run, inside a
committed one exactly one, and `manage.py rota_worker` (a real process) runs it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest
from django.db import connections, transaction
from django.test import override_settings

from rota.contrib.django import enqueue, get_app
from rota.domain.runs import Run
from rota.domain.states import RunState
from rota.errors import UnknownHandler
from tests.api.test_cli_e2e import free_port
from tests.contrib.django_project.shop.models import Order
from tests.helpers import REPO, stop_gracefully, wait_until

pytestmark = pytest.mark.timeout(60)
MANAGE = REPO / "tests" / "contrib" / "django_project" / "manage.py"

ON_EACH_DATABASE = pytest.mark.parametrize(
    "alias",
    [
        pytest.param("default", marks=pytest.mark.django_db(transaction=True)),
        pytest.param(
            "postgres",
            marks=[
                pytest.mark.django_db(transaction=True, databases=["default", "postgres"]),
                pytest.mark.postgres,
            ],
        ),
    ],
)


class Refused(Exception):
    """Raised inside atomic(): the block rolls back. Carries the order it placed."""


def place_order_and_refuse(alias: str) -> None:
    with transaction.atomic(using=alias):
        order, _ = place_order(alias)
        raise Refused(order)


@pytest.fixture
def rota_in(alias: str) -> Iterator[str]:
    """rota lives in Django's database ``alias`` for this test."""
    with override_settings(ROTA={"DATABASE": alias}):
        yield alias


def runs_for(order: str) -> list[Run]:
    return [r for r in get_app().list_runs(handler="ship") if r.payload == {"order": order}]


def place_order(alias: str) -> tuple[str, int | None]:
    order = uuid.uuid4().hex
    Order.objects.using(alias).create(item=order)
    return order, enqueue("ship", {"order": order})


@ON_EACH_DATABASE
def test_a_rolled_back_atomic_leaves_no_run(rota_in: str):
    with pytest.raises(Refused) as refused:
        place_order_and_refuse(rota_in)
    order = refused.value.args[0]
    assert not Order.objects.using(rota_in).filter(item=order).exists()
    assert runs_for(order) == []


@ON_EACH_DATABASE
def test_a_committed_atomic_leaves_exactly_one_run(rota_in: str):
    with transaction.atomic(using=rota_in):
        order, run_id = place_order(rota_in)
        if rota_in == "postgres":
            # Written in Django's transaction: there, and visible to it, before commit.
            assert isinstance(run_id, int)
        else:
            assert run_id is None  # SQLite: made by transaction.on_commit
            assert runs_for(order) == []
    [run] = runs_for(order)
    assert run.state is RunState.PENDING
    assert run_id in (None, run.id)


@pytest.mark.django_db(transaction=True, databases=["default", "postgres"])
@pytest.mark.postgres
def test_a_rolled_back_savepoint_takes_its_run_with_it():
    with override_settings(ROTA={"DATABASE": "postgres"}):
        with transaction.atomic(using="postgres"):
            kept, _ = place_order("postgres")
            with pytest.raises(Refused) as refused:
                place_order_and_refuse("postgres")  # a savepoint, rolled back
        assert len(runs_for(kept)) == 1
        assert runs_for(refused.value.args[0]) == []


@pytest.mark.django_db(transaction=True)
def test_a_bad_enqueue_fails_in_the_view_not_at_commit():
    with pytest.raises(UnknownHandler), transaction.atomic():
        enqueue("no-such-handler")


@ON_EACH_DATABASE
def test_outside_atomic_the_run_is_made_at_once(rota_in: str):
    order = uuid.uuid4().hex
    run_id = enqueue("ship", {"order": order})
    assert [r.id for r in runs_for(order)] == [run_id]


@ON_EACH_DATABASE
@pytest.mark.slow
def test_the_worker_command_runs_it(rota_in: str):
    with transaction.atomic(using=rota_in):
        order, _ = place_order(rota_in)
    [run] = runs_for(order)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROTA_")}
    env.update(
        PYTHONPATH=str(REPO),
        DJANGO_SETTINGS_MODULE="tests.contrib.django_project.settings",
        SHOP_ROTA_DATABASE=rota_in,
        SHOP_SQLITE=connections["default"].settings_dict["NAME"],
        SHOP_POSTGRES_NAME=connections["postgres"].settings_dict["NAME"],
    )
    worker = subprocess.Popen(
        [sys.executable, str(MANAGE), "rota_worker", "--concurrency", "2"], env=env, cwd=REPO
    )
    try:
        done = wait_until(
            lambda: get_app().get_run(run.id).state is RunState.SUCCEEDED,
            timeout=30,
            what=f"manage.py rota_worker to run {run.id}",
        )
        assert done
    finally:
        stop_gracefully(worker, timeout=20)
    assert worker.returncode == 0
    assert get_app().get_run(run.id).result == f"shipped order {order}"


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_the_server_command_serves_the_api(tmp_path: Path):
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROTA_")}
    env.update(
        PYTHONPATH=str(REPO),
        DJANGO_SETTINGS_MODULE="tests.contrib.django_project.settings",
        SHOP_SQLITE=connections["default"].settings_dict["NAME"],
    )
    command = [sys.executable, str(MANAGE), "rota_server", "--dev", "--port", str(port)]
    log = tmp_path / "server.log"
    with log.open("wb") as out:
        server = subprocess.Popen(command, env=env, cwd=REPO, stdout=out, stderr=out)

    def answering() -> bool:
        assert server.poll() is None, "manage.py rota_server exited"
        try:
            return httpx.get(f"http://127.0.0.1:{port}/health/live", timeout=1).is_success
        except httpx.TransportError:
            return False

    try:
        wait_until(answering, timeout=30, what="manage.py rota_server to answer")
    finally:
        stop_gracefully(server, timeout=20)
    # uvicorn ends by raising the signal it caught again, once shut down.
    assert server.returncode in (0, -signal.SIGTERM), log.read_text()
    banner = " ".join(log.read_text().split())
    assert "handlers: rota.start-workflow, ship" in banner  # from the shop's tasks.py


@pytest.mark.django_db(transaction=True)
def test_the_migration_passes_over_a_database_rota_cannot_open(tmp_path: Path):
    from importlib import import_module

    migration = import_module("rota.contrib.django.migrations.0001_rota_tables")
    memory = connections.create_connection("default")
    memory.settings_dict = {**memory.settings_dict, "NAME": ":memory:"}
    try:
        migration.make_rota_tables(None, SimpleNamespace(connection=memory))  # no error
    finally:
        memory.close()
    own = tmp_path / "rota-own.db"
    with override_settings(ROTA={"DATABASE_URL": f"sqlite:///{own}"}):
        migration.make_rota_tables(None, SimpleNamespace(connection=connections["default"]))
    assert not own.exists()  # rota's own database is its workers' to migrate


def test_without_the_app_installed_the_error_says_what_to_add():
    from django.apps import apps

    from rota.contrib.django import NotInstalled

    with override_settings(INSTALLED_APPS=["tests.contrib.django_project.shop"]):
        assert "rota" not in apps.app_configs
        with pytest.raises(NotInstalled, match=r"add 'rota\.contrib\.django' to INSTALLED_APPS"):
            enqueue("ship", {"order": "x"})
    assert "rota" in apps.app_configs
