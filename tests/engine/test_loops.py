"""The event loop a worker runs on, and the defaults a worker starts with (ADR 0019)."""

from __future__ import annotations

import asyncio
import importlib.util

import pytest
from click.testing import CliRunner

from rota.app import App
from rota.cli.worker import worker as worker_command
from rota.engine import loops
from rota.engine.worker import DEFAULT_CONCURRENCY, WorkerOptions
from rota.engine.worker_claims import MAX_CLAIM_BATCH
from rota.errors import InvalidArgument

HAS_UVLOOP = importlib.util.find_spec("uvloop") is not None


def test_auto_is_uvloop_exactly_when_it_is_installed() -> None:
    assert loops.resolve() == ("uvloop" if HAS_UVLOOP else "asyncio")
    assert loops.resolve("asyncio") == "asyncio"


@pytest.mark.parametrize("choice", ["", "trio", "UVLOOP", "auto "])
def test_an_unknown_loop_is_refused_by_name(choice: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        loops.resolve(choice)
    assert repr(choice) in str(caught.value)
    assert "auto or uvloop or asyncio" in str(caught.value)


def test_uvloop_asked_for_but_missing_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(InvalidArgument, match="uvloop is not installed"):
        loops.resolve("uvloop")
    assert loops.resolve("auto") == "asyncio"


@pytest.mark.parametrize("choice", ["auto", "asyncio"])
def test_run_runs_the_coroutine_on_the_loop_it_resolves_to(choice: str) -> None:
    async def loop_module() -> str:
        return type(asyncio.get_running_loop()).__module__

    module = loops.run(loop_module(), choice)
    assert module.startswith("uvloop") == (loops.resolve(choice) == "uvloop")


def test_a_refused_loop_leaves_no_unawaited_coroutine() -> None:
    async def never() -> None:
        raise AssertionError("must not run")

    coro = never()
    with pytest.raises(InvalidArgument):
        loops.run(coro, "nope")
    assert coro.cr_frame is None  # closed, so no "never awaited" warning either


def test_the_default_concurrency_fills_a_claim_batch() -> None:
    # A worker left at its defaults claims whole batches (ADR 0005, ADR 0019).
    assert DEFAULT_CONCURRENCY >= MAX_CLAIM_BATCH
    assert WorkerOptions().concurrency == DEFAULT_CONCURRENCY
    assert App("sqlite:///:memory:").worker_options().concurrency == DEFAULT_CONCURRENCY


def test_the_cli_refuses_an_unknown_loop_before_starting() -> None:
    result = CliRunner().invoke(worker_command, ["--app", "x:y", "--loop", "trio"])
    assert result.exit_code == 2
    assert "'trio' is not one of 'auto', 'uvloop', 'asyncio'" in result.output
