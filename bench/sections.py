"""A section of docs/benchmarks.md that one bench tool owns, between two HTML comments:
re-running the tool replaces its section and leaves the rest of the report alone."""

from __future__ import annotations

from pathlib import Path

REPORT = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"


def markers(tool: str) -> tuple[str, str]:
    return f"<!-- {tool}:start -->", f"<!-- {tool}:end -->"


def replace_section(text: str, start: str, end: str, report: Path = REPORT) -> None:
    """Put ``text`` (which begins with ``start`` and ends with ``end``) where the
    section was, or at the end of the report when it has none yet."""
    content = report.read_text()
    if start in content and end in content:
        head, rest = content.split(start, 1)
        _, tail = rest.split(end, 1)
        content = head + text.rstrip("\n") + tail
    else:
        content = content.rstrip("\n") + "\n\n" + text
    report.write_text(content)
