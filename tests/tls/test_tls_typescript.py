"""The TypeScript client on Node against the TLS server: the ``ca`` option trusts the
test's CA, another CA or none is ``CertificateRefused``, one line, no stack."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers import REPO
from tests.tls.conftest import Pki

PACKAGE = REPO / "clients" / "typescript"
pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(
        shutil.which("node") is None or shutil.which("npm") is None,
        reason="node and npm are not installed: the TypeScript client is not tested here",
    ),
]
SCRIPT = """
import { readFileSync } from "node:fs";
import { RotaClient } from "%(index)s";
const [baseUrl, ca, otherCa] = process.argv.slice(2);
async function attempt(options) {
  try {
    await new RotaClient({ baseUrl, retries: 0, ...options }).listJobs();
    return "answered";
  } catch (error) {
    return `${error.name}: ${error.message}`;
  }
}
console.log(JSON.stringify({
  trusted: await attempt({ ca: readFileSync(ca, "utf8") }),
  other: await attempt({ ca: readFileSync(otherCa) }),
  none: await attempt({}),
}));
"""


def _npm(*args: str) -> None:
    env = {**os.environ, "NO_UPDATE_NOTIFIER": "1"}
    done = subprocess.run(
        ["npm", *args], cwd=PACKAGE, env=env, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, f"npm {' '.join(args)}: {done.stdout[-2000:]}{done.stderr[-2000:]}"


def test_the_ca_option_verifies_the_server(tls_server: str, pki: Pki, tmp_path: Path) -> None:
    _npm("ci", "--no-audit", "--no-fund", "--prefer-offline")
    _npm("run", "build")
    script = tmp_path / "tls.mjs"
    script.write_text(SCRIPT % {"index": (PACKAGE / "dist" / "src" / "index.js").as_uri()})
    ran = subprocess.run(
        ["node", str(script), tls_server, str(pki.ca), str(pki.other_ca)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 0, ran.stderr
    seen = json.loads(ran.stdout)
    # No token: the server's 401 is an answer, so TLS itself went through.
    assert seen["trusted"].startswith("ApiError: "), seen
    assert seen["other"].startswith("CertificateRefused: the server at https://"), seen
    assert "the given CA" in seen["other"]
    assert seen["none"].startswith("CertificateRefused: "), seen
    assert "\n" not in seen["other"]
