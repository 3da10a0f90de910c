"""An App's cluster-wide controls: limits, rates and breakers (rota.services.controls),
queues (rota.services.queues), and the workers and the leader (rota.services.cluster)."""

from __future__ import annotations

from rota.app.base import AppBase
from rota.domain.breakers import BreakerRow
from rota.domain.limits import Limit
from rota.domain.queues import QueueControl, QueueSummary
from rota.domain.rates import RateLimit
from rota.domain.workers import WorkerInfo
from rota.services import cluster as cluster_service
from rota.services import controls as control_service
from rota.services import queues as queue_service
from rota.store.port import LeaderInfo


class AppControls(AppBase):
    """Limits, rates, breakers, workers and the leader."""

    def set_limit(self, scope: str, name: str, max_running: int) -> Limit:
        """A cluster-wide cap on running runs: scope ``"global"`` (name ``"*"``),
        ``"queue"`` or ``"handler"``."""
        return self._stores.use(control_service.set_limit, scope, name, max_running)

    def clear_limit(self, scope: str, name: str) -> None:
        self._stores.use(control_service.clear_limit, scope, name)

    def list_limits(self) -> list[Limit]:
        return self._stores.use(control_service.list_limits)

    def set_rate(self, scope: str, name: str, rate: str) -> RateLimit:
        """A cluster-wide cap on starts, e.g. ``"100/minute"``, of a ``"queue"`` or
        ``"handler"`` (per rate_key); replaces a handler's declared rate until a worker
        starts with the declaration again."""
        return self._stores.use(control_service.set_rate, scope, name, rate)

    def clear_rate(self, scope: str, name: str) -> None:
        self._stores.use(control_service.clear_rate, scope, name)

    def list_rates(self) -> list[RateLimit]:
        return self._stores.use(control_service.list_rates)

    def list_breakers(self) -> list[BreakerRow]:
        """Every circuit breaker that has seen an outcome: state, streak, cause and the
        current failure-rate window's outcomes."""
        return self._stores.use(control_service.list_breakers, self.clock)

    def reset_breaker(self, handler: str, key: str = "") -> BreakerRow:
        """Close a breaker now (recorded as a transition with that cause)."""
        return self._stores.use(control_service.reset_breaker, self.clock, handler, key)

    def list_queues(self) -> list[QueueSummary]:
        """Every queue: depth by state, oldest due run, the recent window's throughput
        and failure rate, the workers serving it, its pause and its cap."""
        return self._stores.use(queue_service.list_queues, self.clock)

    def pause_queue(self, name: str, by: str | None = None) -> QueueControl:
        """Every worker stops claiming the queue's runs (within about a second); runs
        already claimed finish. Kept in the database until :meth:`resume_queue`."""
        return self._stores.use(queue_service.pause_queue, self.clock, name, by)

    def resume_queue(self, name: str) -> QueueControl:
        return self._stores.use(queue_service.resume_queue, self.clock, name)

    def list_workers(self) -> list[WorkerInfo]:
        return self._stores.use(cluster_service.list_workers)

    def drain_worker(self, node_id: str) -> None:
        """The worker stops claiming and finishes what it holds."""
        self._stores.use(cluster_service.drain_worker, self.clock, node_id)

    def resume_worker(self, node_id: str) -> None:
        self._stores.use(cluster_service.resume_worker, self.clock, node_id)

    def leader(self) -> LeaderInfo | None:
        """Who leads the cluster now (holder, term, since when, until when)."""
        return self._stores.use(cluster_service.leader)
