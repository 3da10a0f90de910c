"""One SQL store: the store port implemented once over the dialect seam.

SQLite and PostgreSQL differ only in what :mod:`rota.store.dialect` hands down (their
connections, SQL text, migrations, COPY and LISTEN behind capability flags); every rule,
the claim rounds, the leader-term check and the row mappers live in ``store/core`` once.
"""

from __future__ import annotations

from rota.domain.workflows import DEFAULT_MAP_MAX_ITEMS
from rota.store.bulk_port import BulkRunStore
from rota.store.core.access import CoreAccess
from rota.store.core.api_limits import CoreApiLimits
from rota.store.core.bulk import CoreBulk
from rota.store.core.charts import CoreCharts
from rota.store.core.events import CoreEvents
from rota.store.core.jobs import CoreJobs
from rota.store.core.recent import Recent
from rota.store.core.registry import CoreRegistry
from rota.store.core.runs import CoreRuns
from rota.store.core.webhooks import CoreWebhooks
from rota.store.core.workflow_defs import CoreWorkflowDefinitions
from rota.store.dialect import Dialect
from rota.store.event_port import EventStore
from rota.store.limit_port import ApiLimitStore
from rota.store.port import SchemaStatus
from rota.store.queries import latest_version
from rota.store.webhook_port import WebhookStore


class SqlStore(
    CoreRuns,
    CoreRegistry,
    CoreJobs,
    CoreAccess,
    CoreWebhooks,
    CoreWorkflowDefinitions,
    CoreEvents,
    CoreApiLimits,
    CoreBulk,
    CoreCharts,
):
    def __init__(
        self,
        dialect: Dialect,
        *,
        aging_seconds: float = 60.0,
        map_max_items: int = DEFAULT_MAP_MAX_ITEMS,
    ) -> None:
        self._d = dialect
        self.dialect = dialect.name
        self.aging_seconds = aging_seconds
        self.map_max_items = map_max_items
        # Capabilities, set once here from the dialect: callers test a flag, never the
        # store's type or its URL.
        self.supports_notify = dialect.supports_notify
        self.supports_copy = dialect.supports_copy
        self.supports_handler_transactions = dialect.supports_handler_transactions
        # Read at most once a second, refreshed in the background (store/core/recent.py):
        # the claim and the completion consult them on every call, and they change rarely.
        self._limits = Recent(self._read_limits)
        self._rules = Recent(self._read_rules)
        self._tripped = Recent(self._read_tripped)
        self._paused = Recent(self._read_paused)

    @property
    def webhooks(self) -> WebhookStore:
        return self

    @property
    def events(self) -> EventStore:
        return self

    @property
    def api_limits(self) -> ApiLimitStore:
        return self

    @property
    def bulk(self) -> BulkRunStore:
        return self

    async def open(self) -> None:
        await self._d.open()

    async def close(self) -> None:
        for cached in (self._limits, self._rules, self._tripped, self._paused):
            await cached.close()
        await self._d.close()

    async def schema_status(self) -> SchemaStatus:
        return SchemaStatus(await self._d.schema_version(), latest_version(self.dialect))

    async def migrate(self) -> list[int]:
        return await self._d.migrate()

    async def vacuum(self) -> None:
        await self._d.vacuum()

    async def wait_for_work(self, timeout: float) -> None:
        await self._d.wait_for_work(timeout)
