"""The run filters every run query of the API shares: the listing (GET /api/v1/runs),
the dead-letter queue and the bulk preview and action. One set of query parameters
makes one RunSearch, so a filter added here reaches all of them at once. The listing's
page (``limit``, ``cursor``) is a dependency of its own: a bulk action has no page."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated

from fastapi import Depends, Query

from rota.api.schemas.fields import Instant, Name, Priority
from rota.domain.access import Principal
from rota.domain.labels import LABEL_FILTER_RULE, parse_labels
from rota.domain.search import RunSearch
from rota.domain.states import RunState

StatesQuery = Annotated[list[RunState] | None, Query(description="Any of these states.")]


def distinct_states(given: Iterable[RunState] | None) -> tuple[RunState, ...]:
    """The states asked for, each once, in the order given."""
    return tuple(dict.fromkeys(given or ()))


class RunFilters:
    """The filters of a run query (every one optional, combined with AND), but its
    states, which each route takes or fixes itself (the DLQ: dead-lettered only)."""

    def __init__(
        self,
        namespace: Annotated[Name | None, Query(description="Only this namespace.")] = None,
        handler: Annotated[Name | None, Query()] = None,
        queue: Annotated[Name | None, Query()] = None,
        tag: Annotated[Name | None, Query(description="Runs that require this tag.")] = None,
        job: Annotated[Name | None, Query(description="Runs of this job (in namespace).")] = None,
        created_after: Annotated[
            Instant | None, Query(description="ISO 8601 with an offset, inclusive.")
        ] = None,
        created_before: Annotated[
            Instant | None, Query(description="ISO 8601 with an offset, exclusive.")
        ] = None,
        q: Annotated[
            str | None,
            Query(min_length=1, max_length=200, description="Text in handler, job or error."),
        ] = None,
        owner: Annotated[
            str | None, Query(max_length=200, description="Runs of this owner.")
        ] = None,
        label: Annotated[
            list[str] | None,
            Query(
                description=f"Runs with this label, as {LABEL_FILTER_RULE}; repeatable, "
                "every one must match.",
            ),
        ] = None,
        priority: Annotated[Priority | None, Query(description="Runs of this priority.")] = None,
    ) -> None:
        self.namespace = namespace
        self.handler = handler
        self.queue = queue
        self.tag = tag
        self.job = job
        self.created_after = created_after
        self.created_before = created_before
        self.q = q
        self.owner = owner
        self.label = label or []
        self.priority = priority

    def search(self, principal: Principal, states: tuple[RunState, ...]) -> RunSearch:
        """The search, in the namespaces the caller sees; a label that does not parse
        is an InvalidArgument (a 422 naming it)."""
        return RunSearch(
            namespaces=principal.reach(self.namespace),
            states=states,
            handler=self.handler,
            queue=self.queue,
            tag=self.tag,
            created_after=self.created_after,
            created_before=self.created_before,
            text=self.q,
            owner=self.owner,
            labels=parse_labels(self.label),
            priority=self.priority,
        )

    @property
    def job_key(self) -> tuple[str, str] | None:
        """(namespace, name) of the job asked for: its runs only."""
        return (self.namespace or "default", self.job) if self.job else None

    def described(self, states: tuple[RunState, ...]) -> str:
        """The filter as the audit log shows it: names and values, no payload."""
        given = {
            "namespace": self.namespace,
            "state": ",".join(s.value for s in states) or None,
            "handler": self.handler,
            "queue": self.queue,
            "tag": self.tag,
            "job": self.job,
            "created_after": self.created_after and self.created_after.isoformat(),
            "created_before": self.created_before and self.created_before.isoformat(),
            "q": self.q,
            "owner": self.owner,
            "label": ",".join(self.label) or None,
            "priority": self.priority,
        }
        return " ".join(f"{name}={value}" for name, value in given.items() if value) or "all"


class Page:
    """A listing's page: how many runs, and where the previous page ended."""

    def __init__(
        self,
        limit: Annotated[int, Query(ge=1, le=200)] = 50,
        cursor: Annotated[str | None, Query(max_length=200)] = None,
    ) -> None:
        self.limit = limit
        self.cursor = cursor


Filters = Annotated[RunFilters, Depends()]
PageQuery = Annotated[Page, Depends()]
