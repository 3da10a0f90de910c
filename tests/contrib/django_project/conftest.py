"""The shop project set up for pytest-django: Django is set up when this folder's tests
are collected; each test session gets its own test databases (a SQLite file in a
temporary folder, and test_shop_<pid> on the PostgreSQL server), dropped at the end."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import django
import psycopg
import pytest
from django.conf import settings

from tests.conftest import ADMIN_URL, REQUIRE_POSTGRES
from tests.contrib.django_project import settings as shop_settings

# Configured from the module, not through DJANGO_SETTINGS_MODULE: the variable would
# reach every process the rest of the suite starts (a pytest run by pytester, too).
if not settings.configured:
    settings.configure(
        **{name: getattr(shop_settings, name) for name in dir(shop_settings) if name.isupper()}
    )
django.setup()


def postgres_answers() -> bool:
    try:
        psycopg.connect(ADMIN_URL, connect_timeout=3).close()
    except psycopg.OperationalError:
        return False
    return True


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    ours = [item for item in items if here in Path(str(item.path)).parents]
    if REQUIRE_POSTGRES or not any("postgres" in item.keywords for item in ours):
        return
    if not postgres_answers():
        skip = pytest.mark.skip(reason=f"SKIPPING POSTGRES TESTS: no server at {ADMIN_URL}")
        for item in ours:
            if "postgres" in item.keywords:
                item.add_marker(skip)


@pytest.fixture(scope="session")
def django_db_modify_db_settings(tmp_path_factory: pytest.TempPathFactory) -> None:
    """This session's own test databases (pytest-django creates and drops them)."""
    from django.conf import settings

    folder = tmp_path_factory.mktemp("shop")
    settings.DATABASES["default"]["TEST"]["NAME"] = str(folder / "test-shop.sqlite3")
    settings.DATABASES["postgres"]["NAME"] = f"shop_{os.getpid()}"


@pytest.fixture(autouse=True)
def rota_app_closed_after_each_test() -> Iterator[None]:
    """The project's App holds connections: closed before pytest-django drops the
    databases (the next test builds it again)."""
    from django.apps import apps

    yield
    apps.get_app_config("rota").close()
