"""The runs page filters by owner, label and priority (issue 29); the run page shows a
run's owner and labels. A filter value that does not parse is named on the page and
left out, never a 500."""

from __future__ import annotations

import html
import re

import rota

from .conftest import SignedIn


def _run_ids(page: str) -> list[int]:
    return [int(found) for found in re.findall(r'<a href="/runs/(\d+)">#', page)]


async def test_the_runs_page_filters_by_owner_label_and_priority(
    signed_in: SignedIn, rota_app: rota.App
) -> None:
    both = rota_app.enqueue("anything", owner="billing", labels={"env": "prod", "tier": "1"})
    prod = rota_app.enqueue("anything", owner="data", labels={"env": "prod"}, priority=2)
    bare = rota_app.enqueue("anything", priority=2)
    client = await signed_in()
    assert _run_ids((await client.get("/runs?owner=billing")).text) == [both]
    assert _run_ids((await client.get("/runs?label=env%3Dprod")).text) == [prod, both]
    page = await client.get("/runs?label=env%3Dprod&label=tier%3D1")
    assert _run_ids(page.text) == [both]
    # The form shows each label back, and one empty field for another; the bulk
    # action's form carries both on.
    filter_form = page.text.split('aria-label="Filter runs"', 1)[1].split("</form>", 1)[0]
    assert filter_form.count('name="label"') == 3
    bulk_form = page.text.split('id="bulk-filter"', 1)[1].split("</form>", 1)[0]
    assert bulk_form.count('name="label"') == 2
    assert _run_ids((await client.get("/runs?priority=2")).text) == [bare, prod]
    assert ">billing<" in (await client.get("/runs")).text  # the owner column


async def test_bad_filter_values_are_named_and_left_out(signed_in: SignedIn) -> None:
    client = await signed_in()
    for query, named in [
        ("label=env", "label 'env': expected key=value"),
        ("label=Env%3Dx", "expected 1-63 characters: lowercase letters"),
        ("owner=has%20space", "owner: expected 1-64 characters"),
        ("priority=11", "priority: expected an integer 1-10"),
    ]:
        page = await client.get(f"/runs?{query}")
        assert page.status_code == 200, (query, page.status_code)
        assert named in html.unescape(page.text), query


async def test_the_run_page_shows_owner_and_labels(signed_in: SignedIn, rota_app: rota.App) -> None:
    run_id = rota_app.enqueue("anything", owner="billing", labels={"env": "prod"})
    page = html.unescape((await (await signed_in()).get(f"/runs/{run_id}")).text)
    assert '<a href="/runs?owner=billing">billing</a>' in page
    assert 'href="/runs?label=env%3Dprod">env=prod</a>' in page


async def test_the_job_page_shows_its_runs_owner_and_labels(
    signed_in: SignedIn, rota_app: rota.App
) -> None:
    rota_app.schedule("sync", handler="anything", owner="ops", labels={"env": "prod"})
    page = html.unescape((await (await signed_in()).get("/jobs/default/sync")).text)
    assert '<a href="/runs?owner=ops">ops</a>' in page
    assert "env=prod" in page
