"""``rota server``: the HTTP API on uvicorn, with an embedded worker and leader.

The worker runs on the server's event loop (the API's lifespan starts and stops it), so
one process serves requests and works runs; ``--no-worker`` / ``--no-leader`` turn
those off for API-only nodes behind a load balancer.
"""

from __future__ import annotations

import asyncio
import socket

import uvicorn
from fastapi import FastAPI
from rich.console import Console

from rota import dashboard
from rota.api.settings import ApiSettings
from rota.app import App
from rota.asgi import create_api
from rota.bootstrap import open_store
from rota.endpoint import DEFAULT_URL
from rota.redact import redact_url
from rota.tls import ServerTls

console = Console(stderr=True)


class ServerFailed(Exception):
    """uvicorn could not start (e.g. the port is taken); it has logged why."""


def serve(
    rota_app: App,
    settings: ApiSettings,
    host: str,
    port: int,
    log_level: str,
    tls: ServerTls | None = None,
) -> None:
    """Serve until SIGTERM/SIGINT; the embedded worker hands back unfinished runs."""
    settings.check_startable()
    settings.check_bind(host)
    asyncio.run(_check_database(rota_app))  # one clear error before uvicorn starts
    api = create_api(rota_app, settings)
    server = _Server(uvicorn_config(api, rota_app, settings, host, port, log_level, tls), api)
    _banner(rota_app, settings, host, port, tls)
    server.run()
    if not server.started:
        raise ServerFailed(f"the server did not start on {host}:{port} (see the log above)")


class _Server(uvicorn.Server):
    """uvicorn waits for open responses when it stops; the dashboard's event streams
    never end by themselves, so they are ended first (else an open dashboard tab
    would hold a stop for the whole graceful-shutdown timeout)."""

    def __init__(self, config: uvicorn.Config, api: FastAPI) -> None:
        super().__init__(config)
        self._api = api

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        dashboard.close_streams(self._api)
        await super().shutdown(sockets)


def uvicorn_config(
    api: FastAPI,
    rota_app: App,
    settings: ApiSettings,
    host: str,
    port: int,
    log_level: str,
    tls: ServerTls | None = None,
) -> uvicorn.Config:
    """uvicorn believes X-Forwarded-* only from ROTA_TRUSTED_PROXIES. (Its own default
    trusts them from 127.0.0.1, so anyone on the host, or any proxy that passes the
    header through, could pick their address and with it a fresh failed-auth budget.)"""
    return uvicorn.Config(
        api,
        host=host,
        port=port,
        lifespan="on",
        log_level=log_level,
        server_header=False,
        date_header=True,
        proxy_headers=bool(settings.trusted_proxies),
        forwarded_allow_ips=list(settings.trusted_proxies) or "",
        timeout_graceful_shutdown=int(rota_app.settings.shutdown_grace_seconds) + 5,
        **(tls.uvicorn_options() if tls else {}),
    )


async def _check_database(rota_app: App) -> None:
    store = await open_store(rota_app.settings)  # also migrates an older schema
    await store.close()


def _banner(
    rota_app: App, settings: ApiSettings, host: str, port: int, tls: ServerTls | None
) -> None:
    url = f"{'https' if tls else 'http'}://{host}:{port}"
    duties = [
        name
        for name, on in (("worker", settings.embedded_worker), ("leader", settings.embedded_leader))
        if on
    ]
    console.print(
        f"[bold]rota server[/] on {url} · database {redact_url(rota_app.settings.database_url)} · "
        f"handlers: {', '.join(rota_app.registry.names()) or 'none'} · "
        f"embedded: {', '.join(duties) or 'nothing'} · env {settings.env}"
    )
    if settings.dev_tokens:
        # The CLI looks at DEFAULT_URL unless told: on any other address, say where.
        where = "" if url == DEFAULT_URL else f" --url {url}"
        console.print(
            f"  get a token:  [cyan]export ROTA_TOKEN=$(.venv/bin/rota token create{where})[/]\n"
            f'  then:         [cyan]curl -H "Authorization: Bearer $ROTA_TOKEN" '
            f"{url}/api/v1/jobs[/]\n"
            f"  API document: {url}/openapi.json   (interactive: {url}/docs)\n"
            f"  metrics:      {url}/metrics with that token (README, Operate it)",
            soft_wrap=True,  # a command to copy must not be broken across lines
        )
    console.print(f"  dashboard:    [cyan]{url}/[/]   (sign in with a token or API key)")
