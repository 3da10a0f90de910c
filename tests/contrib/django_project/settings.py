"""A small Django project ("shop") for rota.contrib.django's tests: its SQLite database
("default") and a PostgreSQL one ("postgres"), each able to hold rota's tables.
``SHOP_*`` variables name the databases and which one rota lives in, so a worker
started by a test (manage.py rota_worker) opens the test's own databases."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlsplit

ADMIN = urlsplit(
    os.environ.get("ROTA_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")
)

SECRET_KEY = "tests-only, never deployed"
DEBUG = False
USE_TZ = True
INSTALLED_APPS = ["rota.contrib.django", "tests.contrib.django_project.shop"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("SHOP_SQLITE", str(Path(__file__).parent / "shop.sqlite3")),
        "TEST": {"NAME": os.environ.get("SHOP_SQLITE_TEST")},
    },
    "postgres": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": os.environ.get("SHOP_POSTGRES_NAME", "shop"),
        "USER": unquote(ADMIN.username or ""),
        "PASSWORD": unquote(ADMIN.password or ""),
        "HOST": ADMIN.hostname or "",
        "PORT": str(ADMIN.port or ""),
    },
}

ROTA = {
    "DATABASE": os.environ.get("SHOP_ROTA_DATABASE", "default"),
    "OPTIONS": {"poll_seconds": 0.05, "shutdown_grace_seconds": 5.0},
}
