"""The Django app ``rota.contrib.django`` (label ``rota``): it holds the App.

The App is built on first use, not at start-up: its database is read from Django's
settings then, after a test runner has swapped in its test database. It is built
once, closed when the process exits, and dropped (closed) when ``ROTA`` or
``DATABASES`` change (``override_settings`` in a test), to be built again with the
handlers registered so far. Handlers come from each installed app's ``tasks.py``,
imported when Django starts.
"""

from __future__ import annotations

import atexit
import threading
from typing import Any

from django.apps import AppConfig
from django.conf import settings
from django.core.signals import setting_changed
from django.db import connections
from django.utils.module_loading import autodiscover_modules

from rota.app import App
from rota.contrib.django.settings import RotaDjangoSettings, read, rota_settings
from rota.handlers import HandlerSpec


class RotaConfig(AppConfig):
    name = "rota.contrib.django"
    label = "rota"
    verbose_name = "rota"
    default = True

    def __init__(self, app_name: str, app_module: Any) -> None:
        super().__init__(app_name, app_module)
        self.handler_specs: list[HandlerSpec] = []  # from tasks.py, in import order
        self._app: App | None = None
        self._lock = threading.Lock()

    def ready(self) -> None:
        setting_changed.connect(self._setting_changed, dispatch_uid="rota-settings")
        atexit.register(self.close)
        autodiscover_modules("tasks")

    @property
    def conf(self) -> RotaDjangoSettings:
        return read(getattr(settings, "ROTA", None))

    def rota_app(self) -> App:
        """The App, built on first use from ``settings.ROTA``."""
        with self._lock:
            if self._app is None:
                conf = self.conf
                database = connections[conf.database].settings_dict
                app = App(settings=rota_settings(conf, database))
                for spec in self.handler_specs:
                    app.registry.register(spec)
                self._app = app
            return self._app

    def add_handler(self, spec: HandlerSpec) -> None:
        """Register a handler (rota.contrib.django.handler), on the App if it is built."""
        with self._lock:
            self.handler_specs.append(spec)
            if self._app is not None:
                self._app.registry.register(spec)

    def close(self) -> None:
        """Close the App if it was built; the next use builds it again."""
        with self._lock:
            app, self._app = self._app, None
        if app is not None:
            app.close()

    def _setting_changed(self, setting: str, **_: Any) -> None:
        if setting in ("ROTA", "DATABASES"):
            self.close()
