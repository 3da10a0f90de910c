"""The TypeScript client (clients/typescript): its types are generated from the committed
OpenAPI document and current, it compiles in strict mode, and its node:test suite passes
against a live server it starts itself. Needs node and npm (on these machines and in CI);
without them the test is skipped and says why."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO

PACKAGE = REPO / "clients" / "typescript"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("node") is None or shutil.which("npm") is None,
        reason="node and npm are not installed: the TypeScript client is not tested here",
    ),
]


def _npm(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ROTA_PYTHON": sys.executable, "NO_UPDATE_NOTIFIER": "1"}
    result = subprocess.run(
        ["npm", *args],
        cwd=PACKAGE,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    output = f"{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    assert result.returncode == 0, f"npm {' '.join(args)}:\n{output}"
    return result


@pytest.fixture(scope="module")
def installed() -> None:
    # From the lockfile, exactly; quick when node_modules is already there.
    _npm("ci", "--no-audit", "--no-fund", "--prefer-offline")


@pytest.mark.timeout(200)
def test_types_are_generated_from_the_committed_document(installed: None, tmp_path: Path) -> None:
    fresh = tmp_path / "schema.ts"
    _npm(
        "exec",
        "--",
        "openapi-typescript",
        "../../docs/openapi.json",
        "--default-non-nullable",
        "false",
        "--output",
        str(fresh),
    )
    committed = (PACKAGE / "src" / "schema.ts").read_text(encoding="utf-8")
    assert fresh.read_text(encoding="utf-8") == committed, (
        "clients/typescript/src/schema.ts is stale: run `make openapi`"
    )


@pytest.mark.timeout(280)
def test_the_package_compiles_strictly_and_its_tests_pass(installed: None) -> None:
    _npm("run", "check")
    result = _npm("test", timeout=240)
    assert "# fail 0" in result.stdout, result.stdout[-4000:]
    assert "# pass 0" not in result.stdout


ESM_CONSUMER = """
import { RotaClient } from "@rota/client";

const rota = new RotaClient({ baseUrl: process.env.ROTA_URL!, token: process.env.ROTA_TOKEN });
const runId = await rota.enqueue(
  { handler: "export-csv", payload: { rows: 1 } }, { idempotencyKey: "esm-1" });
const run = await rota.waitFor(runId, { timeoutMs: 30_000 });
console.log("esm", run.state);
"""
CJS_CONSUMER = """
import { RotaClient } from "@rota/client";

async function main(): Promise<void> {
  const rota = new RotaClient({ baseUrl: process.env.ROTA_URL!, token: process.env.ROTA_TOKEN });
  const runId = await rota.enqueue(
    { handler: "export-csv", payload: { rows: 2 } }, { idempotencyKey: "cjs-1" });
  const run = await rota.waitFor(runId, { timeoutMs: 30_000 });
  console.log("cjs", run.state, typeof require);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
"""


@pytest.mark.timeout(280)
def test_the_packed_client_installs_and_runs_from_esm_and_commonjs(
    installed: None, tmp_path: Path, rota_server_url: str, admin_token: str
) -> None:
    """What the README says to do: `npm pack` in clients/typescript, then `npm install`
    the tarball in a project of your own. Installing a local tarball with no runtime
    dependency needs no registry; the consumers compile with the package's own tsc."""
    packed = _npm("pack", "--pack-destination", str(tmp_path)).stdout.strip().splitlines()[-1]
    project = tmp_path / "consumer"
    project.mkdir()
    (project / "package.json").write_text('{"name": "consumer", "private": true}\n')
    (project / "esm.mts").write_text(ESM_CONSUMER)
    (project / "cjs.cts").write_text(CJS_CONSUMER)
    (project / "tsconfig.json").write_text(
        '{"compilerOptions": {"module": "NodeNext", "moduleResolution": "NodeNext",'
        ' "target": "ES2022", "strict": true, "types": ["node"],'
        f' "typeRoots": ["{PACKAGE / "node_modules" / "@types"}"]}},'
        ' "files": ["esm.mts", "cjs.cts"]}\n'
    )

    def run(*command: str) -> str:
        env = {**os.environ, "ROTA_URL": rota_server_url, "ROTA_TOKEN": admin_token}
        result = subprocess.run(
            command, cwd=project, env=env, capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 0, f"{command}:\n{result.stdout}\n{result.stderr}"
        return result.stdout

    run("npm", "install", "--no-audit", "--no-fund", "--offline", str(tmp_path / packed))
    run(str(PACKAGE / "node_modules" / ".bin" / "tsc"), "-p", ".")
    assert run("node", "esm.mjs").strip() == "esm succeeded"
    assert run("node", "cjs.cjs").strip() == "cjs succeeded function"
