"""What every part of an App shares: its settings, clock and handlers, and its stores
(one per event loop, and the sync door: rota.engine.loop_stores.LoopStores)."""

from __future__ import annotations

from rota.clock import Clock
from rota.config import Settings
from rota.engine.loop_stores import LoopStores
from rota.handlers import Registry
from rota.store.port import Store


class AppBase:
    """The state the parts of :class:`rota.App` share, and the doors to its stores."""

    settings: Settings
    clock: Clock
    registry: Registry
    _stores: LoopStores

    async def store(self) -> Store:
        """The store for the running event loop, opened (and migrated) on first use."""
        return await self._stores.store()

    async def aclose(self) -> None:
        """Close the store of the running loop."""
        await self._stores.aclose()

    def close(self) -> None:
        """Close every store this App opened, and its sync loop thread. An App never
        closed is closed at interpreter exit; closing it sooner frees its connections."""
        self._stores.close()
