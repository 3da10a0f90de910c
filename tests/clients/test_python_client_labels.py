"""rota.client's owner and labels (issue 29): enqueue with them, and list runs by
owner, labels (every one must match) and priority, against a live server."""

from __future__ import annotations

import pytest

from rota.client import ApiError, RotaClient

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
