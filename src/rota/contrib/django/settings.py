"""``settings.ROTA``, read and checked once, and the rota Settings it gives.

    ROTA = {
        "DATABASE": "default",     # the Django database rota lives in (the default)
        "DATABASE_URL": None,      # or rota's own database, apart from Django's
        "OPTIONS": {"lease_seconds": 30},   # any rota.Settings field
    }

Without ``DATABASE_URL``, rota's tables live in the Django database ``DATABASE`` (a
PostgreSQL database, or a SQLite file): ``manage.py migrate`` makes them there, and on
PostgreSQL an enqueue inside ``transaction.atomic()`` is written in Django's own
transaction. With ``DATABASE_URL``, rota's database is another one, and an enqueue
inside ``atomic()`` is made when Django's transaction commits.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from rota.config import Settings
from rota.errors import InvalidArgument

KEYS = ("DATABASE", "DATABASE_URL", "OPTIONS")


@dataclass(frozen=True)
class RotaDjangoSettings:
    database: str = "default"  # the Django alias whose database rota shares
    database_url: str | None = None  # rota's own database instead (no shared transaction)
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def shares_django_database(self) -> bool:
        return self.database_url is None


def read(raw: Any) -> RotaDjangoSettings:
    """``settings.ROTA`` (absent: every default), or a one-line error naming the bad key."""
    if raw is None:
        return RotaDjangoSettings()
    if not isinstance(raw, Mapping):
        raise InvalidArgument("settings.ROTA", raw, f"a dict with keys among {', '.join(KEYS)}")
    for key in raw:
        if key not in KEYS:
            raise InvalidArgument("settings.ROTA key", key, f"one of {', '.join(KEYS)}")
    database = raw.get("DATABASE", "default")
    if not isinstance(database, str) or not database:
        raise InvalidArgument("settings.ROTA['DATABASE']", database, "a Django database alias")
    url = raw.get("DATABASE_URL")
    if url is not None and not isinstance(url, str):
        raise InvalidArgument("settings.ROTA['DATABASE_URL']", url, "a database URL or None")
    options = raw.get("OPTIONS", {})
    if not isinstance(options, Mapping):
        raise InvalidArgument("settings.ROTA['OPTIONS']", options, "a dict of rota.Settings")
    return RotaDjangoSettings(database, url, dict(options))


def rota_settings(conf: RotaDjangoSettings, django_database: Mapping[str, Any]) -> Settings:
    """rota's Settings: ``ROTA_*`` variables, then OPTIONS, then the database (the URL
    given, or the one of Django's database ``conf.database``, ``django_database``)."""
    url = conf.database_url or database_url(conf.database, django_database)
    return Settings.from_env(**{**conf.options, "database_url": url})


def database_url(alias: str, database: Mapping[str, Any]) -> str:
    """The URL rota opens to reach the Django database ``alias`` (its settings dict)."""
    engine = str(database.get("ENGINE", ""))
    if engine.endswith(".postgresql"):
        return _postgres_url(database)
    if engine.endswith(".sqlite3"):
        name = str(database.get("NAME") or "")
        if not name or name == ":memory:" or name.startswith("file:"):
            raise InvalidArgument(
                f"DATABASES[{alias!r}]['NAME']",
                name,
                "a SQLite file rota can open too (an in-memory database cannot be "
                "shared: set ROTA['DATABASE_URL'])",
            )
        return f"sqlite:///{Path(name).resolve()}"
    raise InvalidArgument(
        f"DATABASES[{alias!r}]['ENGINE']",
        engine,
        "django.db.backends.postgresql or .sqlite3 (for another database, set "
        "ROTA['DATABASE_URL'] to rota's own)",
    )


def _postgres_url(database: Mapping[str, Any]) -> str:
    user = quote(str(database.get("USER") or ""), safe="")
    password = quote(str(database.get("PASSWORD") or ""), safe="")
    host = str(database.get("HOST") or "")
    port = str(database.get("PORT") or "")
    name = quote(str(database.get("NAME") or ""), safe="")
    auth = f"{user}:{password}@" if password else (f"{user}@" if user else "")
    query = ""
    if host.startswith("/"):  # a Unix socket's folder: psycopg takes it as host=
        host, query = "", f"?host={quote(host, safe='')}"
    location = host + (f":{port}" if port else "")
    return f"postgresql://{auth}{location}/{name}{query}"
