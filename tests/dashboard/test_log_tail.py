"""The run page's log tail: the lines after the last one shown, over HTTP (the browser
test watches the same tail in chromium)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import rota
from rota.domain.runs import LogLine
from tests.api.conftest import ADMIN

from .conftest import SignedIn, bearer, token
from .test_sessions_and_access import _enqueue

AT = datetime(2026, 3, 1, 12, tzinfo=UTC)


async def test_the_tail_gives_the_lines_after_the_last_seen(
    signed_in: SignedIn, rota_app: rota.App
) -> None:
    client = await signed_in()
    run_id = await _enqueue(client)
    store = await rota_app.store()
    lines = [LogLine(run_id, 1, AT, "info", f"line {n}") for n in range(4)]
    assert await store.append_logs(lines, {run_id: 0}) == 4
    seqs = [line.seq for line in await store.logs(run_id)]

    page = await client.get(f"/runs/{run_id}")
    assert page.status_code == 200
    assert all(f"line {n}" in page.text for n in range(4))
    # A run still waiting may log: the page asks for what follows its last line.
    assert f'hx-get="/runs/{run_id}/logs?after={seqs[-1]}"' in page.text

    tail = await client.get(f"/runs/{run_id}/logs?after={seqs[1]}")
    assert tail.status_code == 200
    assert "line 0" not in tail.text
    assert "line 1" not in tail.text
    assert "line 2" in tail.text
    assert "line 3" in tail.text
    assert f'hx-get="/runs/{run_id}/logs?after={seqs[-1]}"' in tail.text

    nothing_new = await client.get(f"/runs/{run_id}/logs?after={seqs[-1]}")
    assert "line" not in re.sub(r"<span[^>]*></span>", "", nothing_new.text)

    api = await client.get(f"/api/v1/runs/{run_id}/logs?after={seqs[2]}", headers=bearer(token()))
    assert api.status_code == 200, api.text
    assert [(x["seq"], x["message"]) for x in api.json()["lines"]] == [(seqs[3], "line 3")]


async def test_a_finished_runs_tail_is_read_once_more_then_stops(
    signed_in: SignedIn, rota_app: rota.App
) -> None:
    client = await signed_in()
    run_id = await _enqueue(client)
    cancelled = await client.post(f"/api/v1/runs/{run_id}/cancel", headers=bearer(token()))
    assert cancelled.status_code == 200, cancelled.text
    assert "hx-get" not in (await client.get(f"/runs/{run_id}")).text.split('id="logs"')[1]
    once_more = await client.get(f"/runs/{run_id}/logs?after=0")
    assert f"/runs/{run_id}/logs?after=0&amp;final=1" in once_more.text
    last = await client.get(f"/runs/{run_id}/logs?after=0&final=1")
    assert "hx-get" not in last.text


async def test_a_bad_tail_request_is_a_message_not_a_500(signed_in: SignedIn) -> None:
    client = await signed_in(ADMIN, ("team-a",))
    mine = await _enqueue(client, "team-a")
    theirs = await _enqueue(client, "secret-team")
    bad = await client.get(f"/runs/{mine}/logs?after=abc")
    assert bad.status_code == 400
    assert "after" in bad.text
    assert (await client.get(f"/runs/{mine}/logs?after=-1")).status_code == 400
    assert (await client.get(f"/runs/{theirs}/logs")).status_code == 404
    assert (await client.get("/runs/999999/logs")).status_code == 404
