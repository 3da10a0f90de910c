"""settings.ROTA read and checked (one line naming the bad value), and the URL rota
opens for a Django database: pure functions, no Django project needed."""

from __future__ import annotations

from pathlib import Path

import pytest

from rota.contrib.django.settings import database_url, read, rota_settings
from rota.errors import InvalidArgument

PG = "django.db.backends.postgresql"


def test_no_settings_is_every_default():
    conf = read(None)
    assert (conf.database, conf.database_url, conf.shares_django_database) == (
        "default",
        None,
        True,
    )


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("sqlite:///x.db", "invalid settings.ROTA: 'sqlite:///x.db'; expected a dict"),
        ({"DATABASES": "x"}, "invalid settings.ROTA key: 'DATABASES'; expected one of"),
        ({"DATABASE": ""}, "invalid settings.ROTA['DATABASE']: ''; expected a Django"),
        ({"OPTIONS": 3}, "invalid settings.ROTA['OPTIONS']: 3; expected a dict"),
    ],
)
def test_a_bad_setting_is_one_line_naming_it(raw: object, message: str):
    with pytest.raises(InvalidArgument) as refused:
        read(raw)
    assert str(refused.value).startswith(message)
    assert "\n" not in str(refused.value)


def test_postgres_url_from_django_settings():
    database = {"ENGINE": PG, "NAME": "shop", "USER": "app", "PASSWORD": "p@ss/word"}
    database |= {"HOST": "db.internal", "PORT": 5433}
    assert (
        database_url("default", database) == "postgresql://app:p%40ss%2Fword@db.internal:5433/shop"
    )
    socket = {"ENGINE": PG, "NAME": "shop", "HOST": "/var/run/postgresql"}
    assert database_url("default", socket) == "postgresql:///shop?host=%2Fvar%2Frun%2Fpostgresql"


def test_sqlite_url_is_the_same_file(tmp_path: Path):
    database = {"ENGINE": "django.db.backends.sqlite3", "NAME": tmp_path / "db.sqlite3"}
    assert database_url("default", database) == f"sqlite:///{tmp_path / 'db.sqlite3'}"


@pytest.mark.parametrize("name", [":memory:", "file:memorydb?mode=memory&cache=shared", ""])
def test_an_in_memory_sqlite_database_cannot_be_shared(name: str):
    with pytest.raises(InvalidArgument, match="set ROTA\\['DATABASE_URL'\\]"):
        database_url("default", {"ENGINE": "django.db.backends.sqlite3", "NAME": name})


def test_another_engine_needs_a_database_url_of_its_own():
    with pytest.raises(InvalidArgument, match=r"django\.db\.backends\.postgresql or \.sqlite3"):
        database_url("default", {"ENGINE": "django.db.backends.mysql", "NAME": "shop"})


def test_options_and_an_own_database_url_make_rotas_settings():
    conf = read({"DATABASE_URL": "sqlite:///rota.db", "OPTIONS": {"lease_seconds": 12.0}})
    settings = rota_settings(conf, {"ENGINE": "django.db.backends.mysql"})
    assert (settings.database_url, settings.lease_seconds) == ("sqlite:///rota.db", 12.0)
    assert not conf.shares_django_database
