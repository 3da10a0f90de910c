""".ci/pip_audit.py never lets "audited nothing" read as a pass."""

from __future__ import annotations

import importlib.util
import json
import subprocess
from types import ModuleType
from typing import Any

import pytest

from tests.helpers import REPO


def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("pip_audit_check", REPO / ".ci" / "pip_audit.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], report: Any, **env: str
) -> tuple[int, str]:
    module = script()

    def fake_run(*args: Any, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        stdout = report if isinstance(report, str) else json.dumps(report)
        return subprocess.CompletedProcess(args, 0, stdout=stdout, stderr="boom")

    monkeypatch.setattr(module.subprocess, "run", fake_run)
    monkeypatch.delenv("ROTA_REQUIRE_PIP_AUDIT", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    code = module.main()
    return code, capsys.readouterr().out


SKIPPED = {"name": "httpx", "skip_reason": "Dependency not found on PyPI"}
CLEAN = {"name": "rich", "version": "15.0.0", "vulns": []}
VULNERABLE = {"name": "jinja2", "version": "2.0", "vulns": [{"id": "PYSEC-1"}]}


def test_nothing_audited_is_a_loud_skip(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    code, out = run(monkeypatch, capsys, {"dependencies": [SKIPPED, SKIPPED]})
    assert code == 0
    assert "pip-audit: SKIPPED: cannot reach advisory database" in out
    code, out = run(monkeypatch, capsys, {"dependencies": [SKIPPED]}, ROTA_REQUIRE_PIP_AUDIT="1")
    assert code == 1


def test_no_report_is_a_skip(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    code, out = run(monkeypatch, capsys, "not json")
    assert (code, "SKIPPED" in out) == (0, True)


def test_vulnerabilities_fail(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    code, out = run(monkeypatch, capsys, {"dependencies": [CLEAN, VULNERABLE, SKIPPED]})
    assert code == 1
    assert "jinja2 2.0: PYSEC-1" in out
    assert "pip-audit: FAILED" in out


def test_partial_and_full_audits(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    code, out = run(monkeypatch, capsys, {"dependencies": [CLEAN, SKIPPED]})
    assert (code, "pip-audit: PARTIAL: 1 of 2 audited" in out) == (0, True)
    code, out = run(monkeypatch, capsys, {"dependencies": [CLEAN]})
    assert (code, "pip-audit: OK: 1 dependencies audited" in out) == (0, True)
