"""The owner and labels rules (rota.domain.labels, ADR 0037): what is taken, in one
form, what is refused with the rule in the message; a job's runs inherit them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from rota.domain.jobs import Job, JobSpec, manual_run, slot_run, spec_from_json, spec_to_json
from rota.domain.labels import (
    MAX_LABELS,
    check_labels,
    check_owner,
    labels_from_stored,
    labels_json,
    parse_label,
    parse_labels,
)
from rota.domain.runs import NewRun
from rota.errors import InvalidArgument

T0 = datetime(2026, 12, 3, tzinfo=UTC)


def test_labels_take_one_form_sorted_by_key() -> None:
    assert check_labels({"b": "2", "a": "1"}) == (("a", "1"), ("b", "2"))
    assert check_labels([("b", "2"), ["a", "1"]]) == (("a", "1"), ("b", "2"))
    assert check_labels(None) == check_labels({}) == ()
    run = NewRun(handler="h", payload_json="null", labels={"z": "", "k.8s/app-name_x": "v"})
    assert run.labels == (("k.8s/app-name_x", "v"), ("z", ""))


@pytest.mark.parametrize(
    ("labels", "rule"),
    [
        ({"Upper": "v"}, "lowercase letters"),
        ({"-lead": "v"}, "starting with a letter or digit"),
        ({"k" * 64: "v"}, "1-63 characters"),
        ({"": "v"}, "1-63 characters"),
        ({"k": "v" * 201}, "0-200 characters"),
        ({"k": 3}, "a string of 0-200 characters"),
        ({f"k{i}": "v" for i in range(MAX_LABELS + 1)}, f"at most {MAX_LABELS} labels"),
        ([("k", "1"), ("k", "2")], "each key at most once"),
        ("k=v", "an object of at most"),
        ({"k": "a\x00b"}, "without NUL"),
    ],
)
def test_bad_labels_are_refused_with_the_rule(labels: object, rule: str) -> None:
    with pytest.raises(InvalidArgument, match="expected") as refused:
        check_labels(labels)
    assert rule in str(refused.value)


@pytest.mark.parametrize("owner", ["o" * 65, "", " team", "team\n", 5])
def test_a_bad_owner_is_refused_with_the_rule(owner: object) -> None:
    with pytest.raises(InvalidArgument, match="1-64 characters"):
        check_owner(owner)
    with pytest.raises(InvalidArgument, match="owner"):
        NewRun(handler="h", payload_json="null", owner=owner)  # type: ignore[arg-type]


def test_owners_like_team_names_and_addresses_are_taken() -> None:
    for owner in ("billing", "team-payments", "ana@example.com", "org/team.sub", "o" * 64):
        assert check_owner(owner) == owner


def test_a_label_filter_splits_at_the_first_equals_sign() -> None:
    assert parse_label("env=prod") == ("env", "prod")
    assert parse_label("q=a=b") == ("q", "a=b")
    assert parse_label("empty=") == ("empty", "")
    with pytest.raises(InvalidArgument, match="expected key=value"):
        parse_label("env")
    assert parse_labels(["b=1", "a=2"]) == (("a", "2"), ("b", "1"))


def test_stored_labels_read_back_as_written() -> None:
    labels = check_labels({"b": "2", "a": 'x"y'})
    assert labels_json(()) is None
    stored = labels_json(labels)
    assert stored == '{"a":"x\\"y","b":"2"}'
    assert labels_from_stored(stored) == labels  # SQLite's text
    assert labels_from_stored({"b": "2", "a": 'x"y'}) == labels  # PostgreSQL's jsonb
    assert labels_from_stored(None) == ()


def _job(**fields: object) -> Job:
    spec = JobSpec(name="sync", handler="h", cron="0 * * * *", kind="cron", **fields)  # type: ignore[arg-type]
    return Job(id=7, spec=spec, paused=False, cursor=T0, next_fire_at=None,
               created_at=T0, updated_at=T0)  # fmt: skip


def test_a_jobs_runs_inherit_its_owner_and_labels() -> None:
    job = _job(owner="ops", labels={"env": "prod"})
    for run in (slot_run(job, T0, T0), manual_run(job, None, None)):
        assert (run.owner, run.labels) == ("ops", (("env", "prod"),))
    bare = slot_run(_job(), T0, T0)
    assert (bare.owner, bare.labels) == (None, ())


def test_a_job_spec_keeps_them_through_its_json() -> None:
    spec = _job(owner="ops", labels={"env": "prod", "a": "1"}).spec
    assert '"labels": {"a": "1", "env": "prod"}' in spec_to_json(spec)
    assert spec_from_json(spec_to_json(spec)) == spec
    # A job saved before owner and labels existed reads back without them.
    old = spec_to_json(_job().spec).replace(', "owner": null, "labels": {}', "")
    assert "labels" not in old
    assert (spec_from_json(old).owner, spec_from_json(old).labels) == (None, ())
    with pytest.raises(InvalidArgument, match="label key"):
        JobSpec(name="j", handler="h", labels={"Bad": "v"})
