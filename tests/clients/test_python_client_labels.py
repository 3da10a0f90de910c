"""rota.client's owner and labels (issue 29): enqueue with them, and list runs by
owner, labels (every one must match) and priority, against a live server."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from rota.client import ApiError, RotaClient
from rota.client.calls import RunFilters

pytestmark = pytest.mark.slow


def test_enqueue_with_owner_and_labels_and_filter_on_them(
    rota_server_url: str, admin_token: str
) -> None:
    with RotaClient(rota_server_url, admin_token) as rota:
        labels = {"env": "prod", "client-test": "yes"}
        both = rota.enqueue("echo", {"n": 1}, owner="py-team", labels=labels, priority=2)
        other = rota.enqueue("echo", {"n": 2}, owner="py-team", labels={"client-test": "yes"})
        run = rota.get_run(both)["run"]
        assert (run["owner"], run["labels"]) == ("py-team", labels)

        def ids(**filters: object) -> list[int]:
            return [r["id"] for r in rota.list_runs(**filters)["items"]]  # type: ignore[arg-type]

        assert ids(owner="py-team") == [other, both]
        assert ids(labels={"client-test": "yes", "env": "prod"}) == [both]
        assert ids(labels={"client-test": "yes"}, priority=2) == [both]
        assert [r["id"] for r in rota.iter_runs(owner="py-team")] == [other, both]
        with pytest.raises(ApiError) as refused:
            rota.list_runs(labels={"Bad": "x"})
        assert refused.value.status == 422
        assert "lowercase letters" in refused.value.detail


def test_bulk_actions_and_the_job_listing_take_the_same_filters(
    rota_server_url: str, admin_token: str
) -> None:
    with RotaClient(rota_server_url, admin_token) as rota:
        tagged = {"client-bulk": "yes"}
        later = datetime.now(UTC) + timedelta(hours=1)  # pending while the test looks
        matched = rota.enqueue(
            "echo", {"n": 1}, queue="py-meta", run_at=later, owner="py-bulk", labels=tagged
        )
        rota.enqueue("echo", {"n": 2}, queue="py-meta", run_at=later, owner="py-bulk")
        rota.enqueue("echo", {"n": 3}, queue="py-meta", run_at=later, labels=tagged)
        narrowed: RunFilters = {"queue": "py-meta", "owner": "py-bulk", "labels": tagged}
        assert rota.preview_bulk("cancel", **narrowed)["count"] == 1
        done = rota.run_bulk("cancel", 1, **narrowed)
        assert done["affected"] == 1
        cancelled = rota.list_runs(queue="py-meta", state="cancelled")["items"]
        assert [r["id"] for r in cancelled] == [matched]
        assert len(rota.list_runs(queue="py-meta", state="pending")["items"]) == 2

        rota.create_job({"name": "py-owned", "handler": "echo", "owner": "py-jobs"})
        rota.create_job({"name": "py-labelled", "handler": "echo", "labels": tagged})
        assert [j["name"] for j in rota.list_jobs(owner="py-jobs")] == ["py-owned"]
        assert [j["name"] for j in rota.list_jobs(labels=tagged)] == ["py-labelled"]
