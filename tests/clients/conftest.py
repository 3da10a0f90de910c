"""A live `rota server` (SQLite, development mode, embedded worker) with the client test
handlers, shared by the tests of one module, and an admin token for it."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.api.test_cli_e2e import free_port, start_server, wait_ready
from tests.helpers import stop_gracefully

pytestmark = pytest.mark.slow


# Not named live_server: pytest-django (installed for tests/contrib) has an autouse
# fixture that takes any fixture of that name for Django's live server.
@pytest.fixture(scope="module")
def rota_server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    home = tmp_path_factory.mktemp("client-server")
    port, log = free_port(), home / "server.log"
    proc = start_server(home / "rota.db", port, log, "--app", "tests.apps.client_app:app")
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, proc, log)
        yield url
    finally:
        stop_gracefully(proc)


@pytest.fixture(scope="module")
def admin_token(rota_server_url: str) -> str:
    answer = httpx.post(f"{rota_server_url}/dev/token", json={"role": "admin"}, timeout=10)
    answer.raise_for_status()
    return str(answer.json()["access_token"])
