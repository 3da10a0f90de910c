"""What a run measured: one record per measurement, failures kept beside successes."""

from __future__ import annotations

import asyncio
import json
import math
import statistics
import sys
import time
import traceback
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def fmt(value: float | None, digits: int = 0) -> str:
    """A figure as the report prints it (thousands separated; a dash when missing)."""
    return "—" if value is None else f"{value:,.{digits}f}"


def run_async(coro: Coroutine[Any, Any, T], timeout: float) -> T:
    """Run parent-side async work (install, enqueue) under a deadline."""
    return asyncio.run(asyncio.wait_for(coro, timeout))


def say(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


@dataclass
class Results:
    meta: dict[str, Any] = field(default_factory=dict)
    records: list[dict[str, Any]] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)

    def add(self, scenario: str, system: str, variant: str, value: float, **extra: Any) -> None:
        self.records.append(
            {"scenario": scenario, "system": system, "variant": variant, "value": value, **extra}
        )

    def attempt(
        self, scenario: str, system: str, variant: str, measure: Callable[[], T]
    ) -> T | None:
        """Run one measurement; a failure is recorded (and printed), never raised, so
        one hung or broken system does not cost the rest of the report."""
        label = f"{scenario} / {system} / {variant}"
        say(f"{label} ...")
        try:
            return measure()
        except Exception as exc:
            detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            say(f"{label} FAILED: {detail}")
            self.failures.append(
                {"scenario": scenario, "system": system, "variant": variant, "error": detail}
            )
            return None

    def values(self, scenario: str, system: str, variant: str) -> list[float]:
        return [
            r["value"]
            for r in self.records
            if (r["scenario"], r["system"], r["variant"]) == (scenario, system, variant)
        ]

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {"meta": self.meta, "records": self.records, "failures": self.failures}
        path.write_text(json.dumps(data, indent=1, default=str))

    @classmethod
    def load(cls, path: Path) -> Results:
        data = json.loads(path.read_text())
        return cls(data["meta"], data["records"], data["failures"])


@dataclass(frozen=True)
class Summary:
    """Median of the repeats, with the spread (min..max) so noise is visible."""

    median: float
    low: float
    high: float
    count: int

    @classmethod
    def of(cls, values: list[float]) -> Summary | None:
        if not values:
            return None
        return cls(statistics.median(values), min(values), max(values), len(values))


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile (no interpolation): p99 of 500 samples is the 495th."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), math.ceil(pct / 100 * len(ordered))))
    return ordered[rank - 1]
