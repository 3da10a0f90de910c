"""Writes a run's figures into docs/reliability.md, between markers for its size, so
the hand-written parts of the page (findings, exclusions) stay as they are."""

from __future__ import annotations

import json
import platform
import subprocess
from datetime import datetime
from pathlib import Path
from typing import Any

from chaos.harness import SIZES

TEMPLATE = """# Reliability: the fault-injection suite

Generated sections below are rewritten by `make chaos` (full) and by CI's reduced run
(`make chaos CHAOS_SIZE=small`); the rest of the page is written by hand.

""" + "".join(f"<!-- chaos:{size}:begin -->\n<!-- chaos:{size}:end -->\n\n" for size in SIZES)


def write(
    path: Path, size: str, started_at: datetime, results: list[dict[str, Any]], skipped: list[str]
) -> None:
    text = path.read_text() if path.exists() else TEMPLATE
    begin, end = f"<!-- chaos:{size}:begin -->", f"<!-- chaos:{size}:end -->"
    if begin not in text or end not in text:
        text = text.rstrip("\n") + f"\n\n{begin}\n{end}\n"
    head, _, rest = text.partition(begin)
    _, _, tail = rest.partition(end)
    path.write_text(head + begin + "\n" + render(size, started_at, results, skipped) + end + tail)


def render(
    size: str, started_at: datetime, results: list[dict[str, Any]], skipped: list[str]
) -> str:
    passed = sum(1 for r in results if r["passed"])
    lines = [
        f"## Last `{size}` run: {started_at:%Y-%m-%d %H:%M} UTC",
        "",
        f"{passed} of {len(results)} scenarios passed; commit {_commit()};"
        f" machine: {platform.machine()}, Python {platform.python_version()}.",
        "",
        "| scenario | result | seconds |",
        "|---|---|---|",
    ]
    lines += [
        f"| {r['name']}: {r.get('title', '')} | {'pass' if r['passed'] else '**FAIL**'} |"
        f" {r['seconds']} |"
        for r in results
    ]
    if skipped:
        lines += ["", f"Not run in this run (see the exclusions below): {', '.join(skipped)}."]
    for r in results:
        lines += ["", f"### {r['name']} ({'pass' if r['passed'] else 'FAIL'})", ""]
        for key, value in r["figures"].items():
            lines.append(f"- {key}: {_value(value)}")
        for note in r.get("notes", []):
            lines.append(f"- note: {note}")
        for failure in r["failures"]:
            lines.append(f"- **failure**: {_one_line(failure)}")
    return "\n".join(lines) + "\n"


def _commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            cwd=Path(__file__).resolve().parent,
        )
    except OSError:
        return "unknown"
    return out.stdout.strip() or "unknown"


def _value(value: Any) -> str:
    if isinstance(value, dict) and "median" in value:
        shown = f"median {value['median']} s, max {value['max']} s over {value['n']}"
        return shown + f" (all: {value['all']})"
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 600 else text[:600] + " ..."
