"""rota's tables, made in each database Django migrates (a router may say no, as for
any app's tables), unless rota has a database of its own (ROTA["DATABASE_URL"]).
A database rota cannot open (in-memory SQLite, MySQL) is passed over, so a project's
tests that never use rota still run on one; rota says why at its first use there.
Not atomic: rota makes its tables on a connection of its own, which must not wait on a
transaction Django holds open. Later rota schema versions are applied by workers on
start (auto_migrate) or `rota db upgrade`."""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any

from django.conf import settings as django_settings
from django.db import migrations, router

from rota.bootstrap import upgrade
from rota.config import Settings
from rota.contrib.django.settings import database_url, read
from rota.errors import InvalidArgument


def make_rota_tables(apps: Any, schema_editor: Any) -> None:
    alias = schema_editor.connection.alias
    if not router.allow_migrate(alias, "rota"):
        return
    if not read(getattr(django_settings, "ROTA", None)).shares_django_database:
        return
    try:
        url = database_url(alias, schema_editor.connection.settings_dict)
    except InvalidArgument:
        return
    settings = Settings.from_env(database_url=url)
    # A test runner may migrate from inside a running event loop: a thread of its own.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as thread:
        thread.submit(asyncio.run, upgrade(settings)).result()


class Migration(migrations.Migration):
    atomic = False
    dependencies: tuple[tuple[str, str], ...] = ()
    operations = (migrations.RunPython(make_rota_tables, migrations.RunPython.noop),)
