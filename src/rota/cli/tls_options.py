"""``--tls-cert``, ``--tls-key`` and ``--tls-ca``: the same three options on every
listener (``rota server``, ``rota worker --http``), each also tls.* in the configuration
file or ROTA_TLS_*."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from rota.cli.config import option
from rota.config.sources import Sources
from rota.tls import ServerTls

F = TypeVar("F", bound=Callable[..., Any])


def tls_options(command: F) -> F:
    command = click.option(
        "--tls-ca",
        default=None,
        metavar="PATH",
        help="Require client certificates signed by this CA (tls.ca, ROTA_TLS_CA).",
    )(command)
    command = click.option(
        "--tls-key",
        default=None,
        metavar="PATH",
        help="The certificate's private key (tls.key, ROTA_TLS_KEY).",
    )(command)
    return click.option(
        "--tls-cert",
        default=None,
        metavar="PATH",
        help="Serve HTTPS with this certificate chain, PEM (tls.cert, ROTA_TLS_CERT).",
    )(command)


def server_tls(
    found: Sources, cert: str | None, key: str | None, ca: str | None
) -> ServerTls | None:
    """The listener's TLS files, checked and loaded, or None for plain HTTP."""
    return ServerTls.from_options(
        option(found, "tls_cert", cert), option(found, "tls_key", key), option(found, "tls_ca", ca)
    )
