"""The Charts page (issue 29): throughput, failures and pickup delay per queue or
handler over 1 h / 24 h / 7 d, from the leader's rollup, with each chart's numbers in a
table; only the namespaces the viewer reaches; a bad range is a 400 page naming it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import rota
from rota.domain.runs import NewRun
from rota.domain.states import AttemptOutcome, RunState
from rota.store.port import Store

from ..contract.support import claim_one, finished, succeeded
from .conftest import VIEWER, SignedIn

T0 = datetime(2030, 1, 1, 12, tzinfo=UTC)


async def _finish(store: Store, namespace: str, handler: str, failed: bool = False) -> None:
    await store.enqueue([NewRun(handler=handler, payload_json="{}", namespace=namespace)], T0)
    claimed = await claim_one(store, T0 + timedelta(seconds=2))
    outcome = (
        finished(claimed, RunState.FAILED, AttemptOutcome.FAILED) if failed else succeeded(claimed)
    )
    await store.complete([outcome], T0 + timedelta(seconds=60))


async def test_charts_of_what_the_viewer_reaches(signed_in: SignedIn, rota_app: rota.App) -> None:
    store = await rota_app.store()
    client = await signed_in(VIEWER, ("default",))
    assert "Nothing is counted yet" in (await client.get("/charts")).text
    await _finish(store, "default", "report")
    await _finish(store, "default", "export", failed=True)
    await _finish(store, "elsewhere", "secret-handler")
    while not (await store.count_chart_batch(T0 + timedelta(minutes=5))).caught_up:
        pass
    page = (await client.get("/charts?range=1h&by=handler")).text
    assert '<a href="/charts?range=1h&amp;by=handler&amp;key=" aria-current="page">1h</a>' in page
    assert '<option value="default/export">export (default)</option>' in page
    assert "secret-handler" not in page
    assert "elsewhere" not in page
    # Each chart's numbers: the minute the runs finished in, in every table.
    assert '<tr><th scope="row">12:01</th><td>2</td><td>1</td></tr>' in page  # throughput
    assert '<tr><th scope="row">12:01</th><td>1</td><td>50.0 %</td></tr>' in page  # failures
    assert '<tr><th scope="row">12:01</th><td>2</td><td>2.0 s</td><td>10.0 s</td>' in page
    one = (await client.get("/charts?range=7d&by=handler&key=default/export")).text
    assert '<option value="default/export" selected>' in one
    assert '<tr><th scope="row">01-01 12:00</th><td>1</td><td>0</td></tr>' in one
    # A key gone, unknown or out of reach: every handler, summed.
    for key in ("default/gone", "elsewhere/secret-handler", "no-slash"):
        every = (await client.get(f"/charts?range=7d&by=handler&key={key}")).text
        assert '<option value="" selected>every handler</option>' in every, key
        assert '<tr><th scope="row">01-01 12:00</th><td>2</td><td>1</td></tr>' in every, key


async def test_a_bad_range_is_a_page_naming_it(signed_in: SignedIn) -> None:
    client = await signed_in(VIEWER)
    answer = await client.get("/charts?range=1y")
    assert answer.status_code == 400
    assert (
        "invalid range: &#39;1y&#39;; expected one of &#39;1h&#39;, &#39;24h&#39;, &#39;7d&#39;"
        in answer.text
    )
