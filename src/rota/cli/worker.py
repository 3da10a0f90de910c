"""``rota worker``: run a worker of the user's App until SIGTERM/SIGINT."""

from __future__ import annotations

import click

from rota.cli.app_loader import app_dir_option, load_app
from rota.cli.config import option, sources
from rota.cli.errors import fail
from rota.cli.store_access import db_option
from rota.cli.tls_options import server_tls, tls_options
from rota.engine import loops
from rota.engine.worker import DEFAULT_CONCURRENCY
from rota.engine.worker_http import WorkerHttp
from rota.errors import RotaError, StoreUnavailable


@click.command()
@click.option("--app", "app_target", required=True, help="MODULE:ATTRIBUTE of your rota.App.")
@app_dir_option
@db_option
@click.option(
    "--concurrency",
    default=None,
    type=int,
    help=f"Runs at once (default {DEFAULT_CONCURRENCY}; async handlers mostly wait on I/O; "
    "see ADR 0019).",
)
@click.option(
    "--loop",
    type=click.Choice(loops.LOOPS),
    default=None,
    help="Event loop (default auto: uvloop when installed, pip install 'rota[uvloop]').",
)
@click.option("--node-id", default=None, help="Unique worker name (default HOST-PID).")
@click.option("--queues", default=None, help="Comma-separated queues (default: the handlers').")
@click.option("--tags", default=None, help="Comma-separated capabilities, e.g. gpu,region-eu.")
@click.option(
    "--http",
    "http_address",
    default=None,
    metavar="HOST:PORT",
    help="Serve /metrics, /health/live and /health/ready here (off by default).",
)
@tls_options
def worker(
    app_target: str,
    app_dir: str,
    db: str | None,
    concurrency: int | None,
    loop: str | None,
    node_id: str | None,
    queues: str | None,
    tags: str | None,
    http_address: str | None,
    tls_cert: str | None,
    tls_key: str | None,
    tls_ca: str | None,
) -> None:
    """Run a worker until SIGTERM/SIGINT. Each option may also come from ROTA_* or the
    configuration file (worker.*, tls.*): `rota config show` says which did."""
    found = sources()
    address = option(found, "http", http_address)
    try:
        tls = server_tls(found, tls_cert, tls_key, tls_ca)
        http = WorkerHttp.from_env(address, tls) if address else None
    except RotaError as exc:
        fail(str(exc))
    app = load_app(app_target, app_dir)
    if db:
        app.settings = app.settings.with_overrides(database_url=db)
    queue_list = option(found, "queues", _split(queues) if queues else None)
    try:
        app.run_worker(
            concurrency=option(found, "concurrency", concurrency),
            node_id=option(found, "node_id", node_id),
            queues=queue_list or None,
            tags=option(found, "tags", _split(tags) if tags is not None else None),
            http=http,
            loop=option(found, "loop", loop),
        )
    except StoreUnavailable as exc:
        fail(str(exc), code=3)
    except RotaError as exc:
        fail(str(exc))


def _split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]
