"""Certificates made for the test (trustme) and real listeners serving them: a
``rota server`` and a ``rota worker --http`` in subprocesses on free ports."""

from __future__ import annotations

import os
import signal
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
import trustme

from tests.helpers import REPO, wait_until


@dataclass(frozen=True)
class Pki:
    """A CA, a server certificate it signed (and its key), another CA that signed
    nothing here, a client certificate for mutual TLS, and an expired certificate."""

    ca: Path
    cert: Path
    key: Path
    other_ca: Path
    client_pair: Path  # the client's key and certificate in one PEM
    expired_cert: Path
    expired_key: Path


def _leaf(folder: Path, name: str, cert: trustme.LeafCert) -> tuple[Path, Path]:
    chain, key = folder / f"{name}.pem", folder / f"{name}.key"
    chain.write_bytes(b"".join(blob.bytes() for blob in cert.cert_chain_pems))
    key.write_bytes(cert.private_key_pem.bytes())
    return chain, key


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    folder = tmp_path_factory.mktemp("pki")
    ca, other = trustme.CA(), trustme.CA()
    ca.cert_pem.write_to_path(str(folder / "ca.pem"))
    other.cert_pem.write_to_path(str(folder / "other-ca.pem"))
    cert, key = _leaf(folder, "server", ca.issue_cert("127.0.0.1", "localhost"))
    past = datetime.now(UTC) - timedelta(days=30)
    expired = ca.issue_cert("127.0.0.1", not_before=past - timedelta(days=1), not_after=past)
    expired_cert, expired_key = _leaf(folder, "expired", expired)
    client = ca.issue_cert("client@rota.test")
    client.private_key_and_cert_chain_pem.write_to_path(str(folder / "client.pem"))
    return Pki(
        folder / "ca.pem",
        cert,
        key,
        folder / "other-ca.pem",
        folder / "client.pem",
        expired_cert,
        expired_key,
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def trusting(ca: Path, client_pair: Path | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(ca))
    if client_pair is not None:
        context.load_cert_chain(str(client_pair))
    return context


def rota_env(tmp_path: Path) -> dict[str, str]:
    env = {**os.environ, "ROTA_DATABASE_URL": f"sqlite:///{tmp_path / 'rota.db'}"}
    for name in ("ROTA_JWT_SECRET", "ROTA_TOKEN", "ROTA_URL", "ROTA_CA_FILE", "ROTA_CONFIG"):
        env.pop(name, None)
    return env


@dataclass
class Listener:
    url: str
    proc: subprocess.Popen[bytes]
    log: Path

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(timeout=10)


def not_verifying() -> ssl.SSLContext:
    """For waiting on a listener whose certificate is meant to fail verification."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def start(
    tmp_path: Path, name: str, args: list[str], ready: str, verify: ssl.SSLContext
) -> Listener:
    """A ``rota`` subprocess, once ``ready`` answers 200 over TLS (checked by ``verify``)."""
    log = tmp_path / f"{name}.log"
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "rota", *args],
            env=rota_env(tmp_path),
            cwd=REPO,
            stdout=out,
            stderr=out,
        )
    listener = Listener(ready.rsplit("/health", 1)[0], proc, log)

    def answering() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"{name} exited: {log.read_text()[-2000:]}")
        try:
            return httpx.get(ready, verify=verify, timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    try:
        wait_until(answering, timeout=45, what=f"{name} to answer over TLS")
    except BaseException:
        listener.stop()
        raise
    return listener


def serve_tls(
    tmp_path: Path, cert: Path, key: Path, verify: ssl.SSLContext, *extra: str
) -> Listener:
    port = free_port()
    args = ["server", "--dev", "--port", str(port), "--no-worker", "--no-leader"]
    args += ["--tls-cert", str(cert), "--tls-key", str(key), *extra]
    return start(tmp_path, "server", args, f"https://127.0.0.1:{port}/health/live", verify)


@pytest.fixture(scope="module")
def tls_server(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    listener = serve_tls(tmp_path_factory.mktemp("server"), pki.cert, pki.key, trusting(pki.ca))
    try:
        yield listener.url
    finally:
        listener.stop()
