"""``rota server --tls-cert/--tls-key`` on a real port with a certificate made for the
test: HTTPS works (and only it sends HSTS), plain HTTP to the TLS port fails cleanly and
the server keeps serving, and the client and the CLI refuse a certificate their CA did
not sign, or one that has expired, with one clear line."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from rota.client import CertificateRefused, RotaClient, ServerUnreachable
from tests.helpers import REPO
from tests.tls.conftest import Pki, not_verifying, rota_env, serve_tls, trusting

pytestmark = pytest.mark.timeout(180)


def rota_cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rota", *args],
        env=rota_env(tmp_path),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_https_works_and_sends_hsts(tls_server: str, pki: Pki) -> None:
    response = httpx.get(f"{tls_server}/health/live", verify=trusting(pki.ca), timeout=10)
    assert response.status_code == 200
    assert response.headers["strict-transport-security"].startswith("max-age=")


def test_the_client_verifies_against_the_given_ca(tls_server: str, pki: Pki) -> None:
    with RotaClient(tls_server, ca_file=str(pki.ca)) as client:
        token = client.dev_token(subject="tls-test")["access_token"]
    with RotaClient(tls_server, token, ca_file=str(pki.ca)) as client:
        assert client.list_jobs() == []


def test_the_cli_verifies_against_the_given_ca(tls_server: str, pki: Pki, tmp_path: Path) -> None:
    made = rota_cli(tmp_path, "--ca-file", str(pki.ca), "token", "create", "--url", tls_server)
    assert made.returncode == 0, made.stderr
    listed = rota_cli(
        tmp_path,
        "--ca-file",
        str(pki.ca),
        "jobs",
        "list",
        "--url",
        tls_server,
        "--token",
        made.stdout.strip(),
        "--json",
    )
    assert (listed.returncode, listed.stdout.strip()) == (0, "[]"), listed.stderr


def test_plain_http_to_the_tls_port_fails_cleanly(tls_server: str, pki: Pki) -> None:
    plain = tls_server.replace("https://", "http://")
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{plain}/health/live", timeout=10)
    with RotaClient(plain, retries=0) as client, pytest.raises(ServerUnreachable):
        client.list_jobs()
    # and the server is none the worse for it
    response = httpx.get(f"{tls_server}/health/live", verify=trusting(pki.ca), timeout=10)
    assert response.status_code == 200


def test_a_certificate_from_another_ca_is_refused(
    tls_server: str, pki: Pki, tmp_path: Path
) -> None:
    client = RotaClient(tls_server, ca_file=str(pki.other_ca), retries=0)
    with client, pytest.raises(CertificateRefused, match="certificate"):
        client.list_jobs()
    refused = rota_cli(
        tmp_path, "--ca-file", str(pki.other_ca), "jobs", "list", "--url", tls_server
    )
    assert refused.returncode == 3
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1, refused.stderr
    assert lines[0].startswith("rota: error: ")
    assert "certificate" in lines[0]
    assert "--ca-file" in lines[0]
    assert "Traceback" not in refused.stderr


def test_without_a_ca_file_a_private_ca_is_not_trusted(tls_server: str) -> None:
    with RotaClient(tls_server, retries=0) as client, pytest.raises(CertificateRefused):
        client.list_jobs()


@pytest.fixture(scope="module")
def expired_server(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("expired")
    listener = serve_tls(folder, pki.expired_cert, pki.expired_key, not_verifying())
    try:
        yield listener.url
    finally:
        listener.stop()


def test_an_expired_certificate_is_refused(expired_server: str, pki: Pki, tmp_path: Path) -> None:
    client = RotaClient(expired_server, ca_file=str(pki.ca), retries=0)
    with client, pytest.raises(CertificateRefused, match="expired"):
        client.list_jobs()
    refused = rota_cli(tmp_path, "--ca-file", str(pki.ca), "jobs", "list", "--url", expired_server)
    assert refused.returncode == 3
    assert "expired" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_client_certificates_are_required_with_tls_ca(pki: Pki, tmp_path: Path) -> None:
    with_client = trusting(pki.ca, pki.client_pair)
    listener = serve_tls(tmp_path, pki.cert, pki.key, with_client, "--tls-ca", str(pki.ca))
    try:
        assert httpx.get(f"{listener.url}/health/live", verify=with_client).status_code == 200
        with pytest.raises(httpx.TransportError):
            # TLS 1.3 sends the server's refusal after the handshake: the request fails
            httpx.get(f"{listener.url}/health/live", verify=trusting(pki.ca), timeout=10)
    finally:
        listener.stop()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--tls-cert", "cert.pem"], "--tls-key (tls.key) is missing"),
        (["--tls-cert", "missing.pem", "--tls-key", "missing.key"], "cannot be used"),
        (["--tls-ca", "ca.pem"], "--tls-ca (tls.ca) needs --tls-cert and --tls-key"),
    ],
)
def test_bad_tls_options_are_one_line(tmp_path: Path, args: list[str], says: str) -> None:
    refused = rota_cli(tmp_path, "server", "--dev", "--port", "1", *args)
    assert refused.returncode == 2
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1, refused.stderr
    assert says in lines[0]
