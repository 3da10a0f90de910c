"""The committed OpenAPI document is the one the server serves: an API change shows up
in review as a change to docs/openapi.json, and the clients are generated from it."""

from __future__ import annotations

import json
from pathlib import Path

from rota.openapi_document import DEFAULT_PATH, document, main, render

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / DEFAULT_PATH


def test_committed_document_matches_the_served_one() -> None:
    served = render(document())
    assert COMMITTED.read_text(encoding="utf-8") == served, (
        "docs/openapi.json is out of date: run `make openapi` and review the diff"
    )


def test_every_operation_has_a_readable_unique_id_a_tag_and_a_description() -> None:
    operations = [
        (path, method, operation)
        for path, item in document()["paths"].items()
        for method, operation in item.items()
    ]
    ids = [operation["operationId"] for _, _, operation in operations]
    assert len(ids) == len(set(ids))
    for path, method, operation in operations:
        assert operation["operationId"].isidentifier(), (path, method)
        assert "_api_v1_" not in operation["operationId"], (path, method)
        assert operation["tags"], (path, method)
        assert operation.get("description"), (path, method)  # the route's docstring


def test_errors_are_problem_details() -> None:
    for item in document()["paths"].values():
        for operation in item.values():
            for status, response in operation["responses"].items():
                if status.startswith(("4", "5")) and "content" in response:
                    assert list(response["content"]) == ["application/problem+json"], status


def test_check_mode_fails_on_drift_and_passes_when_fresh(tmp_path: Path) -> None:
    stale = tmp_path / "openapi.json"
    stale.write_text(json.dumps({"openapi": "3.1.0"}), encoding="utf-8")
    assert main(["--check", str(stale)]) == 1
    assert main([str(stale)]) == 0
    assert main(["--check", str(stale)]) == 0
