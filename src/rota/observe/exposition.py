"""What a scrape of /metrics returns, for a caller who reaches every namespace or only
some (docs/adr/0013-observability.md says who may scrape)."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.metrics_core import Metric

from rota.observe.hooks import OBSERVER

CONTENT_TYPE = CONTENT_TYPE_LATEST


class _NamespaceView:
    def __init__(self, namespaces: frozenset[str]) -> None:
        self.namespaces = namespaces

    def collect(self) -> Iterator[Metric]:
        return OBSERVER.cluster.families(self.namespaces)

    def describe(self) -> Iterator[Metric]:
        return iter(())


def render(namespaces: frozenset[str] | None) -> bytes:
    """Every series of this process (``namespaces`` None), or, for a caller limited to
    some namespaces, only the cluster gauges of those: the process's own series name
    queues and handlers of every namespace it serves."""
    if namespaces is None:
        return generate_latest(OBSERVER.registry)
    view = CollectorRegistry(auto_describe=False)
    view.register(_NamespaceView(namespaces))
    return generate_latest(view)
