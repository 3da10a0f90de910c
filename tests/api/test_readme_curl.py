"""The README's curl examples run exactly as printed, against `rota server` started as
`make run` starts it (example handlers, SQLite, port 5017)."""

from __future__ import annotations

import json
import re
import socket
import subprocess
from pathlib import Path

import pytest

from tests.helpers import REPO

from .test_cli_e2e import start_server, wait_ready

pytestmark = pytest.mark.slow
PORT = 5017  # the documented port: the examples name it


def curl_block() -> str:
    readme = (REPO / "README.md").read_text()
    match = re.search(r"Try it with curl.*?```sh\n(.*?)```", readme, re.DOTALL)
    assert match, "README lost its curl examples"
    return match[1]


def port_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def test_readme_curl_examples_run_as_printed(tmp_path: Path) -> None:
    if not port_free(PORT):
        pytest.skip(f"SKIPPING README CURL TEST: port {PORT} is taken (is `make run` running?)")
    log = tmp_path / "server.log"
    proc = start_server(tmp_path / "rota.db", PORT, log, "--app", "rota.examples:app")
    try:
        wait_ready(f"http://127.0.0.1:{PORT}", proc, log)
        script = curl_block()
        result = subprocess.run(
            [
                "bash",
                "-euo",
                "pipefail",
                "-c",
                script + "\ncurl -s -X POST http://127.0.0.1:5017"
                '/api/v1/jobs/adhoc-export/trigger -H "Authorization: Bearer $ROTA_TOKEN" '
                "-H 'Idempotency-Key: export-1'",
            ],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert result.returncode == 0, result.stderr
    # Each curl prints one JSON document; split them on their boundaries.
    created, triggered, runs, handlers, again = _documents(result.stdout)
    assert created["name"] == "adhoc-export", created
    assert isinstance(triggered["run_id"], int)
    assert [r["id"] for r in runs["items"]] == [triggered["run_id"]]
    assert {h["name"] for h in handlers["items"]} >= {"export-csv", "send-report"}
    assert again == triggered  # the Idempotency-Key returned the same run


def _documents(text: str) -> list[dict[str, object]]:
    decoder = json.JSONDecoder()
    documents, index = [], 0
    while index < len(text):
        if text[index].isspace():
            index += 1
            continue
        document, index = decoder.raw_decode(text, index)
        documents.append(document)
    return documents
