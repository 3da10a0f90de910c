"""TLS for every listener (``rota server``, ``rota worker --http``) and for the client.

A listener gets a certificate and its key (``--tls-cert``/``--tls-key``, tls.cert and
tls.key in rota.yaml, ROTA_TLS_CERT/ROTA_TLS_KEY) and, to require client certificates,
the CA that signs them (``--tls-ca``). Everything is loaded before the listener starts,
so a missing or mismatched file is one line at start-up, not a failed handshake later.
A client verifies the server against the system's CAs or a given one (``--ca-file``)."""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import Any

from rota.errors import RotaError

MINIMUM_VERSION = ssl.TLSVersion.TLSv1_2


class TlsUnusable(RotaError):
    """A certificate, key or CA file cannot be used."""


@dataclass(frozen=True)
class ServerTls:
    cert: str
    key: str
    ca: str | None = None  # set: every client must present a certificate it signed

    @classmethod
    def from_options(cls, cert: str | None, key: str | None, ca: str | None) -> ServerTls | None:
        """None when no TLS is asked for; a checked, loadable set of files otherwise."""
        if cert is None and key is None:
            if ca is not None:
                raise TlsUnusable("--tls-ca (tls.ca) needs --tls-cert and --tls-key as well")
            return None
        if cert is None or key is None:
            missing = "--tls-key (tls.key)" if cert else "--tls-cert (tls.cert)"
            raise TlsUnusable(f"TLS needs a certificate and its key: {missing} is missing")
        tls = cls(cert, key, ca)
        tls.context()  # load now: a bad file stops start-up with one line
        return tls

    def context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = MINIMUM_VERSION
        try:
            context.load_cert_chain(self.cert, self.key)
        except (OSError, ssl.SSLError) as exc:
            raise TlsUnusable(
                f"--tls-cert {self.cert!r} / --tls-key {self.key!r} cannot be used: {_why(exc)}"
            ) from None
        if self.ca is not None:
            try:
                context.load_verify_locations(cafile=self.ca)
            except (OSError, ssl.SSLError) as exc:
                raise TlsUnusable(f"--tls-ca {self.ca!r} cannot be used: {_why(exc)}") from None
            context.verify_mode = ssl.CERT_REQUIRED
        return context

    def uvicorn_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"ssl_certfile": self.cert, "ssl_keyfile": self.key}
        if self.ca is not None:
            options |= {"ssl_ca_certs": self.ca, "ssl_cert_reqs": ssl.CERT_REQUIRED}
        return options


def client_context(ca_file: str | None) -> ssl.SSLContext:
    """Verify servers against ``ca_file`` (None: the system's CAs)."""
    try:
        context = ssl.create_default_context(cafile=ca_file)
    except (OSError, ssl.SSLError) as exc:
        raise TlsUnusable(f"--ca-file {ca_file!r} cannot be used: {_why(exc)}") from None
    context.minimum_version = MINIMUM_VERSION
    return context


def _why(exc: OSError | ssl.SSLError) -> str:
    if isinstance(exc, ssl.SSLError):
        return exc.reason or str(exc)
    return exc.strerror or str(exc)
