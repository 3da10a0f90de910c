"""The store methods the HTTP API needs: run search with keyset pagination, the oldest
due run, API keys and the audit log. Same behaviour on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

from rota.domain.access import AuditQuery, NewApiKey, NewAuditEntry, issue_api_key
from rota.domain.jobs import JobSpec
from rota.domain.search import RunSearch
from rota.domain.states import AttemptOutcome, RunState
from rota.store.port import Store

from .support import T0, at, claim_one, finished, new_run, retrying, succeeded


async def _ids(store: Store, **search: object) -> list[int]:
    return [run.id for run in await store.search_runs(RunSearch(**search))]


async def _seed(store: Store) -> list[int]:
    """r1..r6 across namespaces, handlers, queues, tags, states and creation times."""
    ids = []
    for seconds, fields in [
        (0, {"handler": "report", "queue": "q1"}),  # r1 succeeded
        (10, {"handler": "export", "queue": "q1", "tags": ("gpu",)}),  # r2 pending
        (20, {"handler": "report", "queue": "q2", "namespace": "team-b"}),  # r3 dead
        (30, {"handler": "export", "queue": "q2", "tags": ("gpu", "big")}),  # r4 pending
        (40, {"handler": "report_100", "queue": "q1"}),  # r5 pending
        (50, {"handler": "cleanup", "queue": "q1"}),  # r6 pending
    ]:
        [enqueued] = await store.enqueue([new_run(**fields)], at(seconds))
        ids.append(enqueued.run_id)
    claimed = await claim_one(store, at(60), queues=["q1"], worker_id="w")
    assert claimed.run_id == ids[0]
    await store.complete([succeeded(claimed)], at(61))
    claimed = await claim_one(store, at(62), queues=["q2"], worker_id="w")
    assert claimed.run_id == ids[2]
    await store.complete([finished(claimed, RunState.DEAD_LETTERED, AttemptOutcome.FAILED)], at(63))
    return ids


async def test_search_filters_each_field(store: Store) -> None:
    r1, r2, r3, r4, r5, r6 = await _seed(store)
    assert await _ids(store) == [r6, r5, r4, r3, r2, r1]
    assert await _ids(store, namespaces=("team-b",)) == [r3]
    assert await _ids(store, namespaces=("default", "nope")) == [r6, r5, r4, r2, r1]
    assert await _ids(store, namespaces=()) == []
    assert await _ids(store, states=(RunState.SUCCEEDED,)) == [r1]
    assert await _ids(store, states=(RunState.DEAD_LETTERED,)) == [r3]
    assert await _ids(store, states=(RunState.PENDING, RunState.DEAD_LETTERED)) == [
        r6,
        r5,
        r4,
        r3,
        r2,
    ]
    assert await _ids(store, handler="export") == [r4, r2]
    assert await _ids(store, queue="q2") == [r4, r3]
    assert await _ids(store, tag="gpu") == [r4, r2]
    assert await _ids(store, tag="big") == [r4]
    assert await _ids(store, tag="gp") == []
    assert await _ids(store, created_after=at(20), created_before=at(40)) == [r4, r3]
    assert await _ids(store, handler="report", queue="q1") == [r1]


async def test_keyset_pages_do_not_shift(store: Store) -> None:
    ids = [e.run_id for e in await store.enqueue([new_run() for _ in range(7)], T0)]
    newest_first = sorted(ids, reverse=True)
    page1 = await _ids(store, limit=3)
    page2 = await _ids(store, limit=3, before_id=page1[-1])
    page3 = await _ids(store, limit=3, before_id=page2[-1])
    assert page1 + page2 + page3 == newest_first
    assert len(page3) == 1
    # A run created after page 1 was read does not shift the later pages.
    assert await _ids(store, limit=3, before_id=page1[-1]) == page2


async def test_free_text_matches_handler_error_and_job_name(store: Store) -> None:
    job = await store.save_job(JobSpec(name="Nightly-Billing", handler="bill"), T0, None, T0)
    [by_job, plain, failing, wildcard] = [
        e.run_id
        for e in await store.enqueue(
            [
                new_run(handler="bill", job_id=job.id),
                new_run(handler="mail"),
                new_run(handler="other"),
                new_run(handler="pct_50"),  # names cannot hold a %: see below
            ],
            T0,
        )
    ]
    claimed = await claim_one(store, T0)
    assert claimed.run_id == by_job
    await store.complete([retrying(claimed, error="Upstream TIMEOUT at billing")], at(1))
    claimed = await claim_one(store, at(2))
    assert claimed.run_id == plain
    await store.complete([retrying(claimed, error="SMTP refused")], at(3))
    assert await _ids(store, text="billing") == [by_job]  # job name and error, once
    assert await _ids(store, text="timeout") == [by_job]  # case-insensitive
    assert await _ids(store, text="smtp") == [plain]
    assert await _ids(store, text="mai") == [plain]
    # LIKE wildcards in the text are literal characters: unescaped, % or _ would match
    # every run.
    assert await _ids(store, text="%") == []
    assert await _ids(store, text="_") == [wildcard]
    assert await _ids(store, text="zzz") == []
    assert await _ids(store, text="oth") == [failing]


async def test_search_by_job_id(store: Store) -> None:
    job = await store.save_job(JobSpec(name="j", handler="job"), T0, None, T0)
    [mine, _other] = [
        e.run_id for e in await store.enqueue([new_run(job_id=job.id), new_run()], T0)
    ]
    assert await _ids(store, job_id=job.id) == [mine]


async def test_oldest_due_run_is_judged_at_now(store: Store) -> None:
    assert await store.oldest_due_run_at(T0) is None
    await store.enqueue([new_run(run_at=at(100))], T0)  # not due yet at T0
    [early] = await store.enqueue([new_run(run_at=at(5))], T0)
    assert await store.oldest_due_run_at(T0) is None
    assert await store.oldest_due_run_at(at(10)) == at(5)
    claimed = await claim_one(store, at(10))
    assert claimed.run_id == early.run_id
    assert await store.oldest_due_run_at(at(10)) is None  # claimed runs do not wait
    assert await store.oldest_due_run_at(at(200)) == at(100)
    await store.complete([retrying(claimed, delay=30)], at(11))
    assert await store.oldest_due_run_at(at(200)) == at(41)  # a due retry waits too
    # With no instant given, the database clock decides: today is before these 2030
    # instants, so nothing is due yet.
    assert await store.oldest_due_run_at(None) is None


async def test_api_keys_round_trip_and_revoke(store: Store) -> None:
    issued = issue_api_key()
    new = NewApiKey(
        issued.key_id, issued.secret_hash, "ci", ("jobs:read", "jobs:trigger"), ("a", "b"), "jwt:x"
    )
    created = await store.create_api_key(new, T0)
    assert (created.key_id, created.name, created.scopes, created.namespaces) == (
        issued.key_id,
        "ci",
        ("jobs:read", "jobs:trigger"),
        ("a", "b"),
    )
    assert (created.created_at, created.revoked_at, created.active) == (T0, None, True)
    assert created.secret_hash == issued.secret_hash
    assert issued.plaintext not in repr(created)
    assert await store.get_api_key(issued.key_id) == created
    assert await store.get_api_key("0" * 16) is None
    second = issue_api_key()
    await store.create_api_key(
        NewApiKey(second.key_id, second.secret_hash, "all", ("jobs:admin",), ("*",), "jwt:x"),
        at(1),
    )
    assert [k.name for k in await store.list_api_keys()] == ["ci", "all"]
    revoked = await store.revoke_api_key(issued.key_id, at(5))
    assert revoked is not None
    assert revoked.revoked_at == at(5)
    assert not revoked.active
    again = await store.revoke_api_key(issued.key_id, at(9))
    assert again is not None
    assert again.revoked_at == at(5)
    assert await store.revoke_api_key("f" * 16, at(9)) is None
    got = await store.get_api_key(issued.key_id)
    assert got is not None
    assert not got.active


async def test_audit_log_appends_and_pages_by_namespace(store: Store) -> None:
    written = []
    for i, namespace in enumerate(["a", "b", None, "a"]):
        entry = NewAuditEntry(
            actor=f"jwt:user{i}",
            action="jobs.create",
            target=f"job {namespace}/n{i}",
            namespace=namespace,
            status=201 if i != 1 else 422,
            outcome="ok" if i != 1 else "rejected",
            correlation_id=f"c{i}",
            detail=None if i != 1 else "invalid cron",
        )
        written.append(await store.append_audit(entry, at(i)))
    assert written == sorted(written)
    everything = await store.list_audit(AuditQuery())
    assert [e.id for e in everything] == written[::-1]
    first = everything[-1]
    assert (first.at, first.actor, first.target, first.namespace, first.status) == (
        T0,
        "jwt:user0",
        "job a/n0",
        "a",
        201,
    )
    assert (everything[-2].outcome, everything[-2].detail) == ("rejected", "invalid cron")
    assert [e.correlation_id for e in everything] == ["c3", "c2", "c1", "c0"]
    only_a = await store.list_audit(AuditQuery(namespaces=("a",)))
    assert [e.id for e in only_a] == [written[3], written[0]]
    page = await store.list_audit(AuditQuery(limit=2))
    rest = await store.list_audit(AuditQuery(limit=2, before_id=page[-1].id))
    assert [e.id for e in page + rest] == written[::-1]


async def test_a_signed_out_session_is_refused_until_it_expires_then_pruned(store: Store) -> None:
    assert await store.session_signed_out("sid-1") is False
    await store.sign_out_session("sid-1", T0 + timedelta(hours=8), T0)
    await store.sign_out_session("sid-1", T0 + timedelta(hours=1), T0)  # twice: harmless
    await store.sign_out_session("sid-2", T0 + timedelta(minutes=5), T0)
    assert await store.session_signed_out("sid-1") is True
    assert await store.session_signed_out("sid-2") is True
    assert await store.session_signed_out("sid-3") is False
    # A later sign-out prunes the rows whose cookies have expired (sid-2's), no others.
    await store.sign_out_session("sid-3", T0 + timedelta(hours=9), T0 + timedelta(minutes=6))
    assert await store.session_signed_out("sid-2") is False
    assert await store.session_signed_out("sid-1") is True
    assert await store.session_signed_out("sid-3") is True
