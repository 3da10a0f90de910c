"""Reading the process's metrics in tests: values by name and labels, as deltas (the
registry lives as long as the test process, so every test measures its own change)."""

from __future__ import annotations

from collections.abc import Mapping

from rota.observe.hooks import OBSERVER


def sample(name: str, labels: Mapping[str, str] | None = None) -> float:
    value = OBSERVER.registry.get_sample_value(name, dict(labels or {}))
    return 0.0 if value is None else value


class Delta:
    """``Delta()`` then ``delta(name, labels)``: how much a series grew since."""

    def __init__(self) -> None:
        self._before: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
        for family in OBSERVER.registry.collect():
            for s in family.samples:
                self._before[(s.name, tuple(sorted(s.labels.items())))] = s.value

    def __call__(self, name: str, labels: Mapping[str, str] | None = None) -> float:
        key = (name, tuple(sorted((labels or {}).items())))
        return sample(name, labels) - self._before.get(key, 0.0)
