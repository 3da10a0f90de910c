"""``manage.py rota_server``: rota's HTTP API and dashboard on the project's App, with
an embedded worker and leader (as ``rota server``), until SIGTERM or SIGINT.
Production unless ``--dev`` (or ROTA_ENV) says otherwise: then ROTA_JWT_SECRET is
required, as for ``rota server``."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from rota.contrib.django import get_app
from rota.errors import RotaError


class Command(BaseCommand):
    help = "Serve rota's HTTP API and dashboard (with a worker) until SIGTERM/SIGINT."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=5017)
        parser.add_argument("--no-worker", action="store_true", help="serve the API only")
        parser.add_argument("--concurrency", type=int, default=8)
        parser.add_argument("--dev", action="store_true", help="development mode")

    def handle(self, *args: Any, **options: Any) -> None:
        from rota.api.settings import ApiSettings
        from rota.server import ServerFailed, serve

        app = get_app()
        try:
            settings = ApiSettings.from_env(
                embedded_worker=not options["no_worker"],
                worker_concurrency=options["concurrency"],
                env="development" if options["dev"] else None,
            )
            serve(app, settings, options["host"], options["port"], "info")
        except (RotaError, ServerFailed) as exc:
            raise CommandError(str(exc)) from exc
        finally:
            app.close()
