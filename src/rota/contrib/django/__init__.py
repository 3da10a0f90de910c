"""rota in a Django project (the ``rota[django]`` extra).

Add ``"rota.contrib.django"`` to ``INSTALLED_APPS``, optionally ``ROTA = {...}`` to the
settings (:mod:`rota.contrib.django.settings`), and write handlers in your apps'
``tasks.py``::

    from rota.contrib.django import handler

    @handler("send-welcome", max_attempts=5)
    def send_welcome(ctx, payload): ...

Then ``enqueue("send-welcome", {...})`` from a view, ``manage.py migrate`` makes rota's
tables, ``manage.py rota_worker`` runs the runs, ``manage.py rota_server`` serves the
API and dashboard. Inside ``transaction.atomic()`` on PostgreSQL the run is written in
Django's own transaction and is rolled back with it; on SQLite (or with a rota
database of its own) it is made when the transaction commits. See docs/django.md.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

from django.apps import apps as django_apps
from django.db import connections, transaction

from rota.app import App
from rota.contrib.django.apps import RotaConfig
from rota.errors import RotaError, UnsupportedFeature
from rota.handlers import HandlerFn, make_spec
from rota.services.runs import RunRequest, new_run

__all__ = ["NotInstalled", "enqueue", "get_app", "handler"]

# rota.App.handler's options and defaults: one spelling of a handler's options.
_HANDLER_DEFAULTS: dict[str, Any] = {
    parameter.name: parameter.default
    for parameter in inspect.signature(App.handler).parameters.values()
    if parameter.kind is inspect.Parameter.KEYWORD_ONLY
}


class NotInstalled(RotaError):
    """rota.contrib.django was used without being in INSTALLED_APPS."""

    def __init__(self) -> None:
        super().__init__(
            "rota.contrib.django is not installed: add 'rota.contrib.django' to "
            "INSTALLED_APPS (its label, 'rota', must be free)"
        )


def _config() -> RotaConfig:
    # Not `apps`: in this package that name is the submodule rota.contrib.django.apps.
    try:
        config = django_apps.get_app_config("rota")
    except LookupError:
        raise NotInstalled from None
    if not isinstance(config, RotaConfig):
        raise NotInstalled
    return config


def get_app() -> App:
    """The project's App (built on first use from ``settings.ROTA``)."""
    return _config().rota_app()


def handler(name: str | None = None, **options: Any) -> Any:
    """Register ``fn(ctx, payload)`` as a handler, as :meth:`rota.App.handler` does
    (same options, checked now)."""

    def register(fn: HandlerFn) -> HandlerFn:
        given = {**_HANDLER_DEFAULTS, **options}
        given["tags"] = tuple(given["tags"])
        spec = make_spec(fn, name or str(getattr(fn, "__name__", "")), **given)
        _config().add_handler(spec)
        return fn

    return register


def enqueue(handler: str, payload: Any = None, **options: Any) -> int | None:
    """Create a run (options as :meth:`rota.App.enqueue`). Returns its id, or None when
    it is to be made at the commit of the open ``atomic()`` block.

    * rota in Django's PostgreSQL database: on Django's connection, in its transaction
      when one is open (rolled back with it, committed with it).
    * rota in Django's SQLite file, or in a database of its own (``DATABASE_URL``),
      inside ``atomic()``: checked now, made by ``transaction.on_commit`` (never, if
      the block rolls back). Outside ``atomic()``: made now.
    """
    config = _config()
    app = config.rota_app()
    conf = config.conf
    connection = connections[conf.database]
    if conf.shares_django_database and connection.vendor == "postgresql":
        return app.enqueue(handler, payload, connection=_psycopg(connection), **options)
    if not connection.in_atomic_block:
        return app.enqueue(handler, payload, **options)
    # Checked now, so a bad enqueue fails in the view and not after the commit.
    new_run(app.registry, RunRequest(handler, payload, **options), app.clock.now())
    make = functools.partial(app.enqueue, handler, payload, **options)
    transaction.on_commit(make, using=conf.database)
    return None


def _psycopg(connection: Any) -> Any:
    connection.ensure_connection()
    raw = connection.connection
    if type(raw).__module__.partition(".")[0] != "psycopg":
        raise UnsupportedFeature(
            f"Django's database {connection.alias!r} is on {type(raw).__module__}: rota "
            "shares a transaction with psycopg 3 only (pip install 'psycopg[binary]'), "
            "or set ROTA['DATABASE_URL'] to enqueue at commit"
        )
    return raw
