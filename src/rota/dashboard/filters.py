"""The runs page's filters, read from the query string into a RunSearch. A value that
does not parse is never a 500: it is dropped from the search and named in a message
the page shows ("created_after: expected an ISO 8601 instant with an offset")."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from starlette.datastructures import QueryParams

from rota.domain.access import Principal
from rota.domain.labels import Labels, check_labels, check_owner, parse_label
from rota.domain.runs import MAX_PRIORITY, MIN_PRIORITY, check_name
from rota.domain.search import RunSearch
from rota.domain.states import RunState
from rota.domain.values import MAX_ID, check_instant, check_text, whole_number
from rota.errors import InvalidArgument

PAGE_SIZE = 50
TEXT_FIELDS = ("namespace", "queue", "handler", "job", "tag")
KNOWN = (
    *TEXT_FIELDS,
    *("state", "q", "owner", "priority", "label"),
    *("created_after", "created_before", "before", "notice", "n"),
)


@dataclass
class RunFilters:
    """What the form shows back (as typed) and the search it made."""

    values: dict[str, str] = field(default_factory=dict)
    states: list[RunState] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    search: RunSearch = field(default_factory=RunSearch)
    job: tuple[str, str] | None = None
    labels: list[str] = field(default_factory=list)  # the label=key=value given, as typed


def parse(
    query: QueryParams, principal: Principal, fixed_states: tuple[RunState, ...] = ()
) -> RunFilters:
    filters = RunFilters()
    for name in sorted(set(query) - set(KNOWN)):
        filters.problems.append(f"{_short(name)}: not a filter of this page (ignored)")
    values = {name: query.get(name, "").strip() for name in KNOWN if query.get(name, "").strip()}
    filters.values = {k: v for k, v in values.items() if k not in ("notice", "n", "label")}
    text: dict[str, str | None] = {}
    for name in TEXT_FIELDS:
        text[name] = _checked(filters, name, values.get(name), check_name)
    q = _checked(filters, "q", values.get("q"), lambda n, v: check_text(n, v, max_length=200))
    states = fixed_states or tuple(_states(filters, query.getlist("state")))
    filters.states = list(states)
    created_after = _instant(filters, "created_after", values.get("created_after"))
    created_before = _instant(filters, "created_before", values.get("created_before"))
    before = _id(filters, "before", values.get("before"))
    owner = _checked(filters, "owner", values.get("owner"), lambda n, v: check_owner(v))
    priority = _priority(filters, values.get("priority"))
    labels = _labels(filters, query.getlist("label"))
    namespace = text["namespace"]
    filters.search = RunSearch(
        namespaces=principal.reach(namespace),
        states=states,
        handler=text["handler"],
        queue=text["queue"],
        tag=text["tag"],
        created_after=created_after,
        created_before=created_before,
        text=q,
        owner=owner,
        labels=labels,
        priority=priority,
        before_id=before,
        limit=PAGE_SIZE,
    )
    if text["job"] is not None:
        filters.job = (namespace or "default", text["job"])
    return filters


def _short(value: str) -> str:
    return value[:40] + ("…" if len(value) > 40 else "")


def _checked(filters: RunFilters, name: str, value: str | None, check: object) -> str | None:
    if value is None:
        return None
    try:
        check(name, value)  # type: ignore[operator]
    except InvalidArgument as exc:
        filters.problems.append(f"{name}: expected {exc.allowed} (ignored)")
        return None
    return value


def _states(filters: RunFilters, given: list[str]) -> list[RunState]:
    states = []
    for value in given:
        if not value:
            continue
        try:
            states.append(RunState(value))
        except ValueError:
            allowed = ", ".join(s.value for s in RunState)
            filters.problems.append(f"state: expected one of {allowed} (ignored)")
    return list(dict.fromkeys(states))


def _instant(filters: RunFilters, name: str, value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        parsed = None
    if parsed is None or parsed.tzinfo is None:
        filters.problems.append(
            f"{name}: expected an ISO 8601 instant with an offset, "
            "e.g. 2026-11-30T09:00:00+00:00 (ignored)"
        )
        return None
    try:
        return check_instant(name, parsed)
    except InvalidArgument as exc:
        filters.problems.append(f"{name}: expected {exc.allowed} (ignored)")
        return None


def _priority(filters: RunFilters, value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return whole_number("priority", value, MIN_PRIORITY, MAX_PRIORITY)
    except InvalidArgument:
        rule = f"an integer {MIN_PRIORITY}-{MAX_PRIORITY}"
        filters.problems.append(f"priority: expected {rule} (ignored)")
        return None


def _labels(filters: RunFilters, given: list[str]) -> Labels:
    """Each ``label`` (key=value) that parses; one that does not is named and left out."""
    pairs = []
    for text in (value.strip() for value in given):
        if not text:
            continue
        filters.labels.append(text)
        try:
            pairs.append(parse_label(text))
        except InvalidArgument as exc:
            filters.problems.append(f"label {_short(text)!r}: expected {exc.allowed} (ignored)")
    try:
        return check_labels(pairs)
    except InvalidArgument as exc:
        filters.problems.append(f"labels: expected {exc.allowed} (ignored)")
        return ()


def _id(filters: RunFilters, name: str, value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return whole_number(name, value, 1, MAX_ID)
    except InvalidArgument:
        filters.problems.append(f"{name}: expected a run id, 1-{MAX_ID} (ignored)")
        return None
