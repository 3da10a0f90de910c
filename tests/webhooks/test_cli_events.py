"""`rota webhooks create/update --event`: the choice is EventType's, so every outcome
event can be subscribed to from the CLI, and an unknown one is refused before any call."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from click.testing import CliRunner

from rota.cli import webhooks as cli_webhooks
from rota.domain.webhooks import EventType

OUTCOMES = ("run.cancelled", "run.retrying", "run.timed_out", "run.skipped")


class FakeClient:
    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def create_webhook(self, *args: Any) -> dict[str, Any]:
        self.calls.append(("create", args))
        return {"secret": "whsec_x", "id": 1}

    def update_webhook(self, subscription_id: int, **changes: Any) -> dict[str, Any]:
        self.calls.append(("update", (subscription_id, changes)))
        return {"id": subscription_id}


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeClient:
    client = FakeClient()

    @contextmanager
    def _client(url: str | None, token: str | None) -> Iterator[FakeClient]:
        yield client

    monkeypatch.setattr(cli_webhooks, "api_client", _client)
    return client


def test_every_event_type_is_a_choice() -> None:
    assert set(cli_webhooks.EVENT_CHOICE.choices) == {e.value for e in EventType}
    assert set(OUTCOMES) <= set(cli_webhooks.EVENT_CHOICE.choices)


def test_create_and_update_take_the_outcome_events(fake: FakeClient) -> None:
    events = [arg for event in OUTCOMES for arg in ("--event", event)]
    made = CliRunner().invoke(
        cli_webhooks.webhooks, ["create", "https://receiver.example/hook", *events, "--json"]
    )
    assert made.exit_code == 0, made.output
    [(kind, args)] = fake.calls
    assert kind == "create"
    assert tuple(args[1]) == OUTCOMES
    changed = CliRunner().invoke(
        cli_webhooks.webhooks, ["update", "1", "--event", "run.timed_out", "--json"]
    )
    assert changed.exit_code == 0, changed.output
    assert fake.calls[1] == ("update", (1, {"event_types": ["run.timed_out"]}))


def test_an_unknown_event_is_refused_before_any_call(fake: FakeClient) -> None:
    refused = CliRunner().invoke(
        cli_webhooks.webhooks, ["create", "https://r.example/h", "--event", "run.exploded"]
    )
    assert refused.exit_code == 2
    assert "run.exploded" in refused.output
    assert fake.calls == []
