"""``rota server``: the HTTP API with an embedded worker and leader."""

from __future__ import annotations

from typing import Any

import click

from rota.api.settings import ApiSettings
from rota.cli.app_loader import app_dir_option
from rota.cli.config import option as setting
from rota.cli.config import sources
from rota.cli.errors import fail
from rota.cli.tls_options import server_tls, tls_options
from rota.config.sources import Sources
from rota.endpoint import DEFAULT_HOST, DEFAULT_PORT
from rota.errors import RotaError


@click.command()
@click.option("--app", "app_target", default=None, help="MODULE:ATTRIBUTE of your rota.App.")
@app_dir_option
@click.option("--db", envvar="ROTA_DATABASE_URL", default=None, help="Database URL.")
@click.option("--host", default=None, help=f"Address to listen on (default {DEFAULT_HOST}).")
@click.option(
    "--port", type=click.IntRange(1, 65535), default=None, help=f"(default {DEFAULT_PORT})"
)
@click.option("--no-worker", is_flag=True, help="Serve the API only; work no runs here.")
@click.option("--no-leader", is_flag=True, help="Never stand for leader on this node.")
@click.option("--concurrency", type=int, default=None, help="The embedded worker's (default 8).")
@click.option("--node-id", default=None, help="Unique node name (default HOST-PID).")
@click.option(
    "--dev",
    is_flag=True,
    help="Development mode (as ROTA_ENV=development): POST /dev/token, the public "
    "development key if ROTA_JWT_SECRET is unset; loopback addresses only.",
)
@tls_options
def server(
    app_target: str | None,
    app_dir: str,
    db: str | None,
    host: str | None,
    port: int | None,
    no_worker: bool,
    no_leader: bool,
    concurrency: int | None,
    node_id: str | None,
    dev: bool,
    tls_cert: str | None,
    tls_key: str | None,
    tls_ca: str | None,
) -> None:
    """Serve the HTTP API, with an embedded worker and leader. Production unless
    ROTA_ENV or --dev says otherwise: then ROTA_JWT_SECRET is required. Each option may
    also come from ROTA_* or the configuration file (server.*, tls.*)."""
    from rota.app import App
    from rota.cli.app_loader import load_app
    from rota.errors import StoreUnavailable
    from rota.server import ServerFailed, serve

    found = sources()
    try:
        tls = server_tls(found, tls_cert, tls_key, tls_ca)
        rota_app = load_app(app_target, app_dir) if app_target else App()
        if db:
            rota_app.settings = rota_app.settings.with_overrides(database_url=db)
        settings = _api_settings(found, no_worker, no_leader, concurrency, node_id, dev)
        host_name = setting(found, "host", host)
        serve(rota_app, settings, host_name, setting(found, "port", port), "info", tls)
    except StoreUnavailable as exc:
        fail(str(exc), code=3)
    except (RotaError, ServerFailed) as exc:
        fail(str(exc), code=2)


def _api_settings(
    found: Sources,
    no_worker: bool,
    no_leader: bool,
    concurrency: int | None,
    node_id: str | None,
    dev: bool,
) -> ApiSettings:
    return ApiSettings.from_env(
        embedded_worker=False if no_worker else _on_unless_off(found, "server.embedded_worker"),
        embedded_leader=False if no_leader else _on_unless_off(found, "server.embedded_leader"),
        worker_concurrency=concurrency,
        node_id=setting(found, "node_id", node_id),
        env="development" if dev else None,
    )


def _on_unless_off(found: Any, key: str) -> bool:
    """An embedded duty: on, unless ROTA_* or the file turns it off."""
    return found.value(key) is not False
