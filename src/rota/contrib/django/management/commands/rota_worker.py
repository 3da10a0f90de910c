"""``manage.py rota_worker``: a rota worker on the project's App (handlers from every
installed app's tasks.py), until SIGTERM or SIGINT."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from rota.contrib.django import get_app
from rota.engine.worker import DEFAULT_CONCURRENCY
from rota.errors import RotaError


class Command(BaseCommand):
    help = "Run a rota worker until SIGTERM/SIGINT."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY)
        parser.add_argument("--node-id", default=None, help="unique node name (HOST-PID)")
        parser.add_argument("--queues", default="", help="comma-separated (all: empty)")
        parser.add_argument("--tags", default="", help="comma-separated capabilities")

    def handle(self, *args: Any, **options: Any) -> None:
        app = get_app()
        try:
            app.run_worker(
                concurrency=options["concurrency"],
                node_id=options["node_id"],
                queues=_split(options["queues"]) or None,
                tags=_split(options["tags"]),
            )
        except RotaError as exc:
            raise CommandError(str(exc)) from exc
        finally:
            app.close()


def _split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]
