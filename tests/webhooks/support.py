"""What the webhook tests share: an admin principal, settings that allow the local
receiver, and runs finished straight through the store."""

from __future__ import annotations

from datetime import datetime

from rota.config import Settings
from rota.domain.access import ROLE_SCOPES, Principal, Role
from rota.domain.runs import NewRun, Outcome
from rota.domain.states import AttemptOutcome, RunState
from rota.store.port import ClaimRequest, Store

ADMIN = Principal("tester", "jwt", ROLE_SCOPES[Role.ADMIN], None)


def local_settings(db_url: str, **overrides: object) -> Settings:
    return Settings(
        database_url=db_url,
        webhook_allow_private_addresses=True,
        webhook_timeout_seconds=5.0,
        **overrides,  # type: ignore[arg-type]
    )


async def finish_runs(store: Store, count: int, now: datetime | None) -> list[int]:
    """``count`` runs enqueued, claimed and succeeded: ``count`` run.succeeded events."""
    enqueued = await store.enqueue(
        [NewRun(handler="job", payload_json="{}") for _ in range(count)], now
    )
    claimed = await store.claim(ClaimRequest("w", ("default",), count, 30.0), now)
    outcomes = [
        Outcome(c.run_id, c.fence, RunState.SUCCEEDED, AttemptOutcome.SUCCEEDED, "null")
        for c in claimed
    ]
    await store.complete(outcomes, now)
    return [e.run_id for e in enqueued]
