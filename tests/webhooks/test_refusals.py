"""Subscriptions that must be refused, with the value named and nothing written."""

from __future__ import annotations

import pytest

from rota.clock import FakeClock
from rota.config import Settings
from rota.domain.webhooks import EventType, SubscriptionSpec
from rota.errors import InvalidArgument
from rota.services.webhooks import Webhooks
from rota.store.port import Store
from rota.store.sql_store import SqlStore

from .support import ADMIN

REFUSED = [
    "http://127.0.0.1:8080/hooks",
    "http://localhost/hooks",
    "http://[::1]/hooks",
    "http://169.254.169.254/latest/meta-data",
    "http://10.1.2.3/hooks",
    "http://192.168.0.10/hooks",
    "http://[::ffff:127.0.0.1]/hooks",
    "http://0.0.0.0/hooks",
]
MALFORMED = ["ftp://example.com/hooks", "example.com/hooks", "http:///nohost", "http://u:p@x.io/"]


@pytest.mark.parametrize("url", REFUSED)
async def test_a_refused_address_is_rejected_naming_the_url(
    store: Store, db_url: str, url: str
) -> None:
    assert isinstance(store, SqlStore)
    webhooks = Webhooks(store, Settings(database_url=db_url), FakeClock())
    with pytest.raises(InvalidArgument) as refused:
        await webhooks.create(ADMIN, SubscriptionSpec("default", url, (EventType.RUN_FAILED,)))
    assert refused.value.name == "url"
    assert refused.value.value == url
    assert "private" in refused.value.allowed
    assert await store.list_subscriptions(None) == []


@pytest.mark.parametrize("url", MALFORMED)
async def test_a_url_that_is_not_http_of_a_host_is_rejected(
    store: Store, db_url: str, url: str
) -> None:
    assert isinstance(store, SqlStore)
    webhooks = Webhooks(store, Settings(database_url=db_url), FakeClock())
    with pytest.raises(InvalidArgument) as refused:
        await webhooks.create(ADMIN, SubscriptionSpec("default", url, (EventType.RUN_FAILED,)))
    assert refused.value.name == "url"
    assert "u:p" not in str(refused.value)  # credentials are never repeated
    assert await store.list_subscriptions(None) == []


@pytest.mark.parametrize("types", [["run.exploded"], [], "run.failed"])
def test_an_unknown_event_type_is_refused(types: object) -> None:
    with pytest.raises(InvalidArgument) as refused:
        SubscriptionSpec("default", "https://example.com/", types)  # type: ignore[arg-type]
    assert refused.value.name == "event_types"
    assert "run.succeeded" in refused.value.allowed
