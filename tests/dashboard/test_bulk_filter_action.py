"""The runs page's bulk action on its filter (issue 29): the count first, then a
confirming form; the scope its API twin needs; CSRF; one audit entry; a stale count or a
filter that does not read is refused with nothing done."""

from __future__ import annotations

import re

import httpx

from tests.api.conftest import ADMIN

from .conftest import OPERATOR, VIEWER, SignedIn, bearer, csrf_of, token

PREVIEW = "/runs/bulk-action"


async def _enqueue(client: httpx.AsyncClient, queue: str, count: int) -> None:
    for _ in range(count):
        body = {"handler": "anything", "payload": {"secret": "p4yload"}, "queue": queue}
        answer = await client.post("/api/v1/runs", json=body, headers=bearer(token()))
        assert answer.status_code == 201, answer.text


async def _states(client: httpx.AsyncClient, queue: str) -> set[str]:
    page = await client.get(f"/api/v1/runs?queue={queue}", headers=bearer(token()))
    return {run["state"] for run in page.json()["items"]}


def _form_fields(page: httpx.Response) -> dict[str, list[str]]:
    """The hidden fields of the page's confirming form, as a browser would send them."""
    form = page.text.split('action="/runs/bulk-action"', 1)[1].split("</form>", 1)[0]
    fields: dict[str, list[str]] = {}
    for name, value in re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', form):
        fields.setdefault(name, []).append(value)
    return fields


async def test_count_confirm_and_act_on_the_filter(signed_in: SignedIn) -> None:
    client = await signed_in(OPERATOR)
    await _enqueue(client, "mass", 3)
    await _enqueue(client, "other", 1)
    runs_page = await client.get("/runs?queue=mass&state=pending")
    assert 'action="/runs/bulk-action"' in runs_page.text
    assert '<option value="delete">' not in runs_page.text  # delete needs jobs:admin
    preview = await client.get(f"{PREVIEW}?action=cancel&queue=mass&state=pending")
    assert preview.status_code == 200, preview.text
    assert "<strong>3</strong> run(s) match now." in preview.text
    fields = _form_fields(preview)
    assert (fields["expected_count"], fields["queue"], fields["state"]) == (
        ["3"],
        ["mass"],
        ["pending"],
    )
    done = await client.post(PREVIEW, data=fields)
    assert done.status_code == 303, done.text
    assert done.headers["location"] == "/runs?queue=mass&state=pending&notice=bulk-done&n=3"
    assert "The bulk action changed 3 run(s)." in (await client.get(done.headers["location"])).text
    assert await _states(client, "mass") == {"cancelled"}
    assert await _states(client, "other") == {"pending"}
    # The same confirmation again: the count is 0 now, so it is refused, nothing done.
    stale = await client.post(PREVIEW, data=fields)
    assert stale.status_code == 409
    assert "expected_count" in stale.text
    audit = await client.get("/api/v1/audit?limit=50", headers=bearer(token()))
    entries = [e for e in audit.json()["items"] if e["action"] == "act_on_runs_in_bulk"]
    assert [e["status"] for e in entries] == [409, 303]
    assert entries[1]["target"] == (
        "cancel runs where queue=mass&state=pending; matched 3, affected 3, skipped 0"
    )
    assert "p4yload" not in str(audit.json())


async def test_a_viewer_sees_the_count_but_no_action_and_a_forged_post_is_refused(
    signed_in: SignedIn,
) -> None:
    client = await signed_in(VIEWER)
    await _enqueue(client, "mass", 2)
    assert "bulk-action" not in (await client.get("/runs")).text
    preview = await client.get(f"{PREVIEW}?action=cancel&queue=mass")
    assert preview.status_code == 200
    assert "<strong>2</strong> run(s) match now." in preview.text
    assert "<button" not in preview.text.replace('<button type="submit">Sign out</button>', "")
    assert "This needs scope jobs:trigger." in preview.text
    forged = {"csrf": csrf_of(preview), "action": "cancel", "queue": "mass", "expected_count": "2"}
    refused = await client.post(PREVIEW, data=forged)
    assert refused.status_code == 403
    assert "this needs scope jobs:trigger" in refused.text
    assert await _states(client, "mass") == {"pending"}


async def test_without_the_csrf_token_or_the_admin_scope_nothing_is_done(
    signed_in: SignedIn,
) -> None:
    client = await signed_in(OPERATOR)
    await _enqueue(client, "mass", 1)
    for csrf in ({}, {"csrf": "made-up"}):
        answer = await client.post(
            PREVIEW, data={**csrf, "action": "cancel", "expected_count": "1"}
        )
        assert answer.status_code == 403
        assert "CSRF" in answer.text
    assert await _states(client, "mass") == {"pending"}
    csrf = csrf_of(await client.get("/runs"))
    delete = {"csrf": csrf, "action": "delete", "expected_count": "0"}
    refused = await client.post(PREVIEW, data=delete)
    assert refused.status_code == 403
    assert "jobs:admin" in refused.text


async def test_bad_input_is_a_4xx_naming_it(signed_in: SignedIn) -> None:
    client = await signed_in(ADMIN)
    await _enqueue(client, "mass", 1)
    unknown = await client.get(f"{PREVIEW}?action=explode")
    assert unknown.status_code == 400  # the dashboard's InvalidArgument
    assert "cancel, requeue, replay, delete" in unknown.text
    wrong_state = await client.get(f"{PREVIEW}?action=replay&state=pending")
    assert wrong_state.status_code == 400
    assert "dead_lettered" in wrong_state.text
    unread = await client.get(f"{PREVIEW}?action=cancel&created_after=yesterday")
    assert unread.status_code == 200
    assert "created_after: expected an ISO 8601 instant" in unread.text
    assert "Fix the filter first" in unread.text
    csrf = csrf_of(await client.get("/runs"))
    widened = {
        "csrf": csrf,
        "action": "cancel",
        "created_after": "yesterday",
        "expected_count": "1",
    }
    refused = await client.post(PREVIEW, data=widened)
    assert refused.status_code == 400
    assert "filter" in refused.text
    no_count = await client.post(PREVIEW, data={"csrf": csrf, "action": "cancel"})
    assert no_count.status_code == 400
    assert "expected_count" in no_count.text
    assert await _states(client, "mass") == {"pending"}


async def test_the_runs_pages_owner_label_and_priority_filter_carries_into_the_action(
    signed_in: SignedIn,
) -> None:
    client = await signed_in(OPERATOR)
    made: dict[str, int] = {}
    for name, extra in (
        ("acme", {"owner": "billing", "labels": {"customer": "acme", "env": "prod"}}),
        ("acme-test", {"owner": "billing", "labels": {"customer": "acme", "env": "test"}}),
        ("globex", {"owner": "billing", "labels": {"customer": "globex"}, "priority": 7}),
        ("data", {"owner": "data", "labels": {"customer": "acme", "env": "prod"}}),
    ):
        body = {"handler": "anything", "queue": "meta", **extra}
        answer = await client.post("/api/v1/runs", json=body, headers=bearer(token()))
        made[name] = int(answer.json()["run_id"])
    query = "queue=meta&owner=billing&label=customer%3Dacme&label=env%3Dprod"
    runs_page = await client.get(f"/runs?{query}")
    form = runs_page.text.split('id="bulk-filter"', 1)[1].split("</form>", 1)[0]
    hidden = re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', form)
    assert sorted(hidden) == [
        ("label", "customer=acme"),
        ("label", "env=prod"),
        ("owner", "billing"),
        ("queue", "meta"),
    ]
    preview = await client.get(f"{PREVIEW}?action=cancel&{query}")
    assert "<strong>1</strong> run(s) match now." in preview.text
    assert "<dt>label</dt><dd>env=prod</dd>" in preview.text
    done = await client.post(PREVIEW, data=_form_fields(preview))
    assert done.status_code == 303, done.text
    by_priority = await client.get(f"{PREVIEW}?action=cancel&queue=meta&priority=7")
    assert "<strong>1</strong> run(s) match now." in by_priority.text
    assert (await client.post(PREVIEW, data=_form_fields(by_priority))).status_code == 303
    page = await client.get("/api/v1/runs?queue=meta&state=cancelled", headers=bearer(token()))
    assert {run["id"] for run in page.json()["items"]} == {made["acme"], made["globex"]}
