"""Sessions, CSRF, who sees which buttons, forged posts, the audit log, namespaces and
bad input: over HTTP against the real app, on SQLite and PostgreSQL."""

from __future__ import annotations

import time

import httpx

from rota.asgi import create_api
from rota.dashboard.sessions import COOKIE, Session, encode, new_session, session_key
from rota.domain.access import Principal, Scope
from tests.api.conftest import ADMIN, SIGNING_KEY, api_settings, make_rota_app, serving

from .conftest import OPERATOR, VIEWER, SignedIn, bearer, csrf_of, sign_in, token

PAGES = ("/", "/runs", "/dlq", "/jobs", "/workers", "/limits", "/leader", "/breakers")


async def _enqueue(client: httpx.AsyncClient, namespace: str = "default") -> int:
    answer = await client.post(
        "/api/v1/jobs",
        json={"name": f"nightly-{namespace}", "handler": "anything", "namespace": namespace},
        headers=bearer(token()),
    )
    assert answer.status_code == 201, answer.text
    triggered = await client.post(
        f"/api/v1/jobs/nightly-{namespace}/trigger?namespace={namespace}",
        headers=bearer(token()),
    )
    assert triggered.status_code == 202, triggered.text
    return int(triggered.json()["run_id"])


async def _audit(client: httpx.AsyncClient) -> list[dict[str, object]]:
    answer = await client.get("/api/v1/audit?limit=200", headers=bearer(token()))
    assert answer.status_code == 200, answer.text
    return list(answer.json()["items"])


async def test_every_page_needs_a_session(client: httpx.AsyncClient) -> None:
    for path in PAGES:
        answer = await client.get(path)
        assert answer.status_code == 303, path
        assert answer.headers["location"].startswith("/signin?next="), path


async def test_sign_in_sets_a_strict_http_only_cookie(client: httpx.AsyncClient) -> None:
    answer = await sign_in(client, token())
    assert answer.status_code == 303
    cookie = answer.headers["set-cookie"].lower()
    assert "httponly" in cookie
    assert "samesite=strict" in cookie
    assert "secure" not in cookie  # plain HTTP here; over HTTPS it is Secure
    for path in PAGES:
        page = await client.get(path)
        assert page.status_code == 200, (path, page.text[:300])
        assert "default-src 'none'" in page.headers["content-security-policy"]


async def test_secure_cookie_over_https(api: object) -> None:
    from tests.api.conftest import serving

    async with serving(api) as plain:  # type: ignore[arg-type]
        secure = httpx.AsyncClient(transport=plain._transport, base_url="https://rota.test")
        answer = await sign_in(secure, token())
        assert "secure" in answer.headers["set-cookie"].lower()
        await secure.aclose()


async def test_a_bad_credential_is_refused_and_audited(client: httpx.AsyncClient) -> None:
    answer = await sign_in(client, "rota_0123456789abcdef_" + "x" * 43)
    assert answer.status_code == 401
    assert "not valid" in answer.text
    assert COOKIE not in answer.headers.get("set-cookie", "")
    entries = await _audit(client)
    assert any(e["action"] == "authenticate" and e["outcome"] == "denied" for e in entries)
    assert all("x" * 43 not in str(e) for e in entries)


async def test_forged_expired_and_other_key_cookies_go_to_sign_in(
    client: httpx.AsyncClient,
) -> None:
    principal = Principal("ana", "jwt", frozenset(Scope), None)
    now = time.time()
    from datetime import UTC, datetime

    good = new_session(principal, datetime.now(UTC), None, None)
    expired = Session(good.session_id, principal, now - 1, None)
    cookies = {
        "forged": encode(good, session_key(SIGNING_KEY))[:-4] + "AAAA",
        "expired": encode(expired, session_key(SIGNING_KEY)),
        "other key": encode(good, session_key("another-signing-key-0123456789abcdef-xyz")),
        "garbage": "not-a-cookie",
    }
    for why, value in cookies.items():
        client.cookies.set(COOKIE, value)
        answer = await client.get("/runs")
        assert answer.status_code == 303, why
        assert answer.headers["location"].startswith("/signin"), why
    client.cookies.set(COOKIE, encode(good, session_key(SIGNING_KEY)))
    assert (await client.get("/runs")).status_code == 200


async def test_sign_out_ends_the_session(signed_in: SignedIn) -> None:
    client = await signed_in()
    page = await client.get("/")
    cookie = client.cookies.get(COOKIE)
    answer = await client.post("/signout", data={"csrf": csrf_of(page)})
    assert answer.status_code == 303
    assert (await client.get("/")).status_code == 303
    client.cookies.set(COOKIE, cookie)  # a copy kept of the cookie is refused too
    assert (await client.get("/")).status_code == 303
    # An error page shows the header (nav, sign-out form) only to a live session.
    missing = await client.get("/runs/1/x")  # no such route: a 404 before any page
    assert missing.status_code == 404
    assert 'action="/signout"' not in missing.text


async def test_sign_out_on_one_server_ends_the_session_on_another(
    signed_in: SignedIn, db_url: str
) -> None:
    # Two servers on one database, as two `rota server` processes would be.
    on_a = await signed_in()
    other_app = make_rota_app(db_url)
    try:
        async with serving(create_api(other_app, api_settings())) as on_b:
            cookie = on_a.cookies.get(COOKIE)
            assert cookie is not None
            on_b.cookies.set(COOKIE, cookie)
            assert (await on_b.get("/runs")).status_code == 200  # the session holds on B
            page = await on_a.get("/")
            assert (await on_a.post("/signout", data={"csrf": csrf_of(page)})).status_code == 303
            assert (await on_b.get("/runs")).status_code == 303  # and ends on B too
            assert (
                (await on_b.get("/runs", headers={"hx-request": "true"}))
                .headers.get("hx-redirect", "")
                .startswith("/signin")
            )
    finally:
        other_app.close()


async def test_revoking_the_api_key_ends_its_session(client: httpx.AsyncClient) -> None:
    created = await client.post(
        "/api/v1/api-keys",
        json={"name": "oncall", "scopes": ["jobs:read"], "namespaces": ["*"]},
        headers=bearer(token()),
    )
    assert created.status_code == 201, created.text
    key = created.json()
    assert (await sign_in(client, key["key"])).status_code == 303
    assert (await client.get("/runs")).status_code == 200
    revoked = await client.delete(f"/api/v1/api-keys/{key['key_id']}", headers=bearer(token()))
    assert revoked.status_code in (200, 204), revoked.text
    assert (await client.get("/runs")).status_code == 303


async def test_a_viewer_sees_no_buttons_and_a_forged_post_is_refused(
    signed_in: SignedIn,
) -> None:
    client = await signed_in(VIEWER)
    run_id = await _enqueue(client)
    page = await client.get(f"/runs/{run_id}")
    assert page.status_code == 200
    assert "Cancel run" not in page.text
    assert "<button" not in page.text.replace('<button type="submit">Sign out</button>', "")
    for path in ("/runs", "/dlq", "/workers", "/limits"):
        text = (await client.get(path)).text
        for allowed in ("Sign out", "Filter"):
            text = text.replace(f'<button type="submit">{allowed}</button>', "")
        assert "<button" not in text, path
    forged = await client.post(f"/runs/{run_id}/cancel", data={"csrf": csrf_of(page)})
    assert forged.status_code == 403
    assert "this needs scope jobs:trigger" in forged.text
    api = await client.post(f"/api/v1/runs/{run_id}/cancel", headers=bearer(token(VIEWER)))
    assert api.status_code == 403
    assert api.json()["detail"] in forged.text  # refused exactly as the API refuses it
    run = await client.get(f"/api/v1/runs/{run_id}", headers=bearer(token()))
    assert run.json()["run"]["state"] == "pending"
    denied = [e for e in await _audit(client) if e["action"] == "cancel_run"]
    assert len(denied) == 2
    assert {e["outcome"] for e in denied} == {"denied"}
    assert f"run {run_id}" in {e["target"] for e in denied}


async def test_a_post_without_the_csrf_token_is_refused(signed_in: SignedIn) -> None:
    client = await signed_in(ADMIN)
    run_id = await _enqueue(client)
    for data in ({}, {"csrf": "made-up"}):
        answer = await client.post(f"/runs/{run_id}/cancel", data=data)
        assert answer.status_code == 403
        assert "CSRF" in answer.text
    run = await client.get(f"/api/v1/runs/{run_id}", headers=bearer(token()))
    assert run.json()["run"]["state"] == "pending"


async def test_an_action_lands_in_the_audit_log_like_its_api_twin(signed_in: SignedIn) -> None:
    client = await signed_in(OPERATOR)
    first, second = await _enqueue(client), None
    page = await client.get(f"/runs/{first}")
    answer = await client.post(f"/runs/{first}/cancel", data={"csrf": csrf_of(page)})
    assert answer.status_code == 303
    assert answer.headers["location"] == f"/runs/{first}?notice=cancel-requested"
    assert "Cancel requested." in (await client.get(answer.headers["location"])).text
    triggered = await client.post(
        "/api/v1/jobs/nightly-default/trigger", headers=bearer(token(OPERATOR))
    )
    second = triggered.json()["run_id"]
    await client.post(f"/api/v1/runs/{second}/cancel", headers=bearer(token(OPERATOR)))
    entries = [e for e in await _audit(client) if e["action"] == "cancel_run"]
    assert [(e["target"], e["outcome"], e["namespace"], e["status"]) for e in entries] == [
        (f"run {second}", "ok", "default", 200),
        (f"run {first}", "ok", "default", 303),
    ]


async def test_bulk_cancel_and_requeue(signed_in: SignedIn) -> None:
    client = await signed_in(OPERATOR)
    runs = [await _enqueue(client)]
    for _ in range(2):
        answer = await client.post(
            "/api/v1/jobs/nightly-default/trigger", headers=bearer(token(OPERATOR))
        )
        runs.append(answer.json()["run_id"])
    csrf = csrf_of(await client.get("/runs"))
    cancelled = await client.post(
        "/runs/bulk", data={"csrf": csrf, "action": "cancel", "run_id": runs, "back": "/runs"}
    )
    assert cancelled.headers["location"] == "/runs?notice=cancelled-many&n=3"
    requeued = await client.post(
        "/runs/bulk", data={"csrf": csrf, "action": "requeue", "run_id": runs[:2]}
    )
    assert requeued.headers["location"] == "/runs?notice=replayed-many&n=2"
    again = await client.post(
        "/runs/bulk", data={"csrf": csrf, "action": "cancel", "run_id": [runs[0], 999999]}
    )
    assert again.headers["location"] == "/runs?notice=not-all&n=1"  # the unknown one
    nothing = await client.post("/runs/bulk", data={"csrf": csrf, "action": "cancel"})
    assert nothing.status_code == 400
    assert "run_id" in nothing.text


async def test_unknown_ids_are_a_404_page(signed_in: SignedIn) -> None:
    client = await signed_in()
    unknown = ("/runs/424242", "/runs/abc", "/runs/99999999999999999999", "/jobs/x/no", "/runs/1/x")
    for path in unknown:
        answer = await client.get(path)
        assert answer.status_code == 404, path
        assert answer.headers["content-type"].startswith("text/html"), path
        assert "Not found" in answer.text, path
        assert 'action="/signout"' in answer.text, path  # signed in: the header is shown
    for api_path in ("/api/v1/nope", "/nowhere"):  # not the dashboard's: the API's problems
        answer = await client.get(api_path)
        assert answer.headers["content-type"] == "application/problem+json", api_path


async def test_malformed_filters_give_a_message_not_a_500(signed_in: SignedIn) -> None:
    client = await signed_in()
    bad = (
        "state=bogus&created_after=yesterday&created_before=2026-01-01T00:00:00&before=-3"
        "&queue=" + "q" * 300 + "&q=%00&colour=red"
    )
    answer = await client.get(f"/runs?{bad}")
    assert answer.status_code == 200
    named = ("state:", "created_after:", "created_before:", "before:", "queue:", "q:", "colour:")
    for field in named:
        assert field in answer.text, field


async def test_another_namespace_is_never_shown(signed_in: SignedIn) -> None:
    client = await signed_in(ADMIN, ("team-a",))
    mine = await _enqueue(client, "team-a")
    theirs = await _enqueue(client, "secret-team")
    for path in PAGES:
        assert "secret-team" not in (await client.get(path)).text, path
    asked = (await client.get("/runs?namespace=secret-team")).text
    assert f"#{theirs}" not in asked
    assert "No runs match." in asked
    assert (await client.get("/jobs/secret-team/nightly-secret-team")).status_code == 404
    assert (await client.get(f"/runs/{theirs}")).status_code == 404
    assert (await client.get(f"/runs/{mine}")).status_code == 200
    assert f"#{mine}" in (await client.get("/runs")).text
    assert f"#{theirs}" not in (await client.get("/runs")).text


async def test_the_leader_page_shows_when_leadership_changed_hands(
    signed_in: SignedIn, rota_app: object
) -> None:
    from datetime import UTC, datetime, timedelta

    client = await signed_in(VIEWER)
    store = await rota_app.store()  # type: ignore[attr-defined]
    start = datetime.now(UTC) - timedelta(minutes=10)
    assert await store.acquire_leadership("node-a", None, 5, start) == 1
    assert await store.acquire_leadership("node-b", None, 5, start + timedelta(minutes=1)) == 2
    text = (await client.get("/leader")).text
    rows = text.split('id="h-terms"')[1]
    assert rows.index("node-b") < rows.index("node-a")  # newest first
    assert "<td>2</td><td>node-b</td>" in rows
    assert "<td>1</td><td>node-a</td>" in rows


async def test_editing_a_schedule(signed_in: SignedIn) -> None:
    client = await signed_in(OPERATOR)
    await _enqueue(client)
    page = await client.get("/jobs/default/nightly-default")
    csrf = csrf_of(page)
    form = {"csrf": csrf, "cron": "0 9 * * 1", "timezone": "Europe/Paris", "misfire": "skip"}
    saved = await client.post("/jobs/default/nightly-default", data=form)
    assert saved.status_code == 303
    job = (await client.get("/api/v1/jobs/nightly-default", headers=bearer(token()))).json()
    assert (job["cron"], job["timezone"], job["misfire"]) == ("0 9 * * 1", "Europe/Paris", "skip")
    bad = await client.post(
        "/jobs/default/nightly-default", data={"csrf": csrf, "cron": "61 * * * *"}
    )
    assert bad.status_code == 400
    assert "cron" in bad.text
    zone = await client.post(
        "/jobs/default/nightly-default", data={"csrf": csrf, "timezone": "Mars/Olympus"}
    )
    assert zone.status_code == 400
    entries = [e for e in await _audit(client) if e["action"] == "update_job"]
    assert [e["outcome"] for e in entries] == ["rejected", "rejected", "ok"]


async def test_limits_are_edited_by_a_cluster_admin_only(signed_in: SignedIn) -> None:
    client = await signed_in(ADMIN)
    csrf = csrf_of(await client.get("/limits"))
    saved = await client.post(
        "/limits", data={"csrf": csrf, "scope": "queue", "name": "etl", "max_running": "3"}
    )
    assert saved.headers["location"] == "/limits?notice=limit-set"
    assert "etl" in (await client.get("/limits")).text
    bad = await client.post(
        "/limits", data={"csrf": csrf, "scope": "planet", "name": "x", "max_running": "3"}
    )
    assert bad.status_code == 400
    assert "limit scope" in bad.text
    team = await sign_in(client, token(ADMIN, ("team-a",)))  # an admin of one namespace
    assert team.status_code == 303
    page = await client.get("/limits")
    assert "Save limit" not in page.text
    refused = await client.post(
        "/limits/clear", data={"csrf": csrf_of(page), "scope": "queue", "name": "etl"}
    )
    assert refused.status_code == 403
    assert "acts on the whole cluster" in refused.text
