"""`rota breakers list|reset`, on both stores."""

from __future__ import annotations

import asyncio

from click.testing import CliRunner, Result

from rota.bootstrap import open_store
from rota.cli.main import main
from rota.config import Settings
from rota.domain.breakers import Breaker
from rota.domain.runs import NewRun, Outcome
from rota.domain.states import AttemptOutcome, RunState
from rota.store.port import ClaimRequest


def _rota(db_url: str, *args: str) -> Result:
    return CliRunner().invoke(main, [*args, "--db", db_url])


async def _trip(db_url: str) -> None:
    """One failure of 'charge' under a breaker that opens at the first."""
    store = await open_store(Settings(database_url=db_url))
    try:
        await store.set_breaker_rule("charge", Breaker(failures=1, cool_down=3600))
        await store.enqueue([NewRun("charge", "{}", breaker_key="psp.example")], None)
        [run] = await store.claim(ClaimRequest("w", ("default",), 1, 30.0, ()), None)
        failed = Outcome(run.run_id, run.fence, RunState.FAILED, AttemptOutcome.FAILED)
        await store.complete([failed], None)
    finally:
        await store.close()


def test_an_open_breaker_is_listed_and_reset(db_url: str) -> None:
    asyncio.run(_trip(db_url))
    listed = _rota(db_url, "breakers", "list")
    assert listed.exit_code == 0, listed.output
    assert "open" in listed.output
    assert "psp.example" in listed.output
    reset = _rota(db_url, "breakers", "reset", "charge", "--key", "psp.example")
    assert reset.exit_code == 0, reset.output
    after = _rota(db_url, "breakers", "list").output
    assert "closed" in after
    assert "open " not in after
    assert "operator" in after


def test_resetting_an_unknown_breaker_names_it(db_url: str) -> None:
    result = _rota(db_url, "breakers", "reset", "nope")
    assert result.exit_code != 0
    assert "nope" in result.output


async def _count(db_url: str) -> None:
    """One failure and one success of 'charge' under a failure-rate rule: 1 of 2."""
    store = await open_store(Settings(database_url=db_url))
    try:
        await store.set_breaker_rule("charge", Breaker(failure_rate=0.5, window=3600))
        for state, outcome in (
            (RunState.FAILED, AttemptOutcome.FAILED),
            (RunState.SUCCEEDED, AttemptOutcome.SUCCEEDED),
        ):
            await store.enqueue([NewRun("charge", "{}")], None)
            [run] = await store.claim(ClaimRequest("w", ("default",), 1, 30.0, ()), None)
            await store.complete([Outcome(run.run_id, run.fence, state, outcome)], None)
    finally:
        await store.close()


def test_the_list_shows_the_current_failure_rate_window(db_url: str) -> None:
    asyncio.run(_count(db_url))
    listed = _rota(db_url, "breakers", "list")
    assert listed.exit_code == 0, listed.output
    assert "window" in listed.output
    assert "1/2" in listed.output, listed.output


def test_the_list_can_be_limited_to_namespaces(db_url: str) -> None:
    """Issue 31: the breakers runs of a namespace moved (the 'default' one here)."""
    asyncio.run(_trip(db_url))
    mine = _rota(db_url, "breakers", "list", "--namespace", "default")
    assert mine.exit_code == 0, mine.output
    assert "psp.example" in mine.output
    other = _rota(db_url, "breakers", "list", "--namespace", "team-b")
    assert other.exit_code == 0, other.output
    assert "psp.example" not in other.output
