"""``rota worker --http`` over TLS, its files given in the configuration file: HTTPS
answers the probes, plain HTTP to the port gets no answer, another CA is refused."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.tls.conftest import Pki, free_port, start, trusting

pytestmark = pytest.mark.timeout(180)


def test_a_worker_serves_its_probes_over_tls(pki: Pki, tmp_path: Path) -> None:
    port = free_port()
    config = tmp_path / "rota.yaml"
    config.write_text(
        f"worker:\n  http: 127.0.0.1:{port}\n  node_id: tls-worker\n"
        f"tls:\n  cert: {pki.cert}\n  key: {pki.key}\n"
    )
    args = ["--config", str(config), "worker", "--app", "tests.apps.proc_app:app"]
    url = f"https://127.0.0.1:{port}"
    worker = start(tmp_path, "worker", args, f"{url}/health/live", trusting(pki.ca))
    try:
        with pytest.raises(httpx.TransportError):
            httpx.get(f"http://127.0.0.1:{port}/health/live", timeout=10)
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            httpx.get(f"{url}/health/live", verify=trusting(pki.other_ca), timeout=10)
        assert httpx.get(f"{url}/health/live", verify=trusting(pki.ca)).status_code == 200
    finally:
        worker.stop()
