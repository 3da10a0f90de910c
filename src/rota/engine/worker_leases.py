"""A worker's leases: renew every held lease in one statement, and act on the answer
(a lease lost, a cancel requested)."""

from __future__ import annotations

import asyncio

from rota.engine.worker_state import Held, WorkerBase
from rota.errors import StoreError
from rota.observe import hooks


class Leases(WorkerBase):
    """The lease heartbeat, and asking a run's handler to stop."""

    async def heartbeat(self) -> None:
        """Renew every held lease at once; act on lost leases and cancel requests."""
        held = [h for h in self._held.values() if not h.released]
        if not held:
            return
        try:
            result = await self.store.renew(
                self.options.node_id,
                [h.lease for h in held],
                self.settings.lease_seconds,
                self.clock.db_now(),
            )
        except StoreError as exc:
            self._log.warning("lease renewal failed; will retry", error=str(exc))
            return
        for h in held:
            run_id = h.claimed.run_id
            if run_id in result.lost and run_id in self._held and not h.recording:
                h.lost = True
                hooks.lease_lost()
                self._log.warning("lease lost; stopping the run", run_id=run_id)
                self._cancel(h)
            elif run_id in result.cancel_requested and not h.ctx.is_cancelled():
                self._log.info("cancel requested", run_id=run_id)
                # An async handler stops at its next await; a plain def cannot be
                # interrupted in its thread, so it gets the grace to see is_cancelled().
                spec = self.registry.get(h.claimed.handler)
                self._cancel(h, at_once=spec is not None and spec.is_async)

    def _cancel(self, held: Held, at_once: bool = False) -> None:
        """Ask the handler to stop (ctx.cancelled); if it has not returned after the
        grace period (``at_once``: now), cancel its task, which ends the attempt
        Cancelled."""
        held.ctx.cancelled.set()
        task = self._tasks.get(held.claimed.run_id)

        def force() -> None:
            if task is not None and not task.done() and not held.recording:
                task.cancel()

        if at_once:
            force()
        else:
            asyncio.get_running_loop().call_later(self.settings.cancel_grace_seconds, force)
