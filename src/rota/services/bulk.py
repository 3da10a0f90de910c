"""Many run requests made into runs at once (``enqueue_many``): what they share is
checked once per distinct shape, not once per run.

A bulk enqueue's requests nearly always share their handler and options and differ only
in their payloads. Each distinct shape (handler plus every option a request gives) is
made into a run by :func:`rota.services.runs.new_run` once, with its defaults and all its
checks; each request of that shape is then that run's :meth:`~NewRun.sibling`, with its
own payload, idempotency key, run_at and deadline checked. The runs equal what
``new_run`` makes of each request alone, and the first bad request raises the same
error, before anything is written.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from datetime import datetime
from typing import Any

from rota.domain.runs import NewRun
from rota.handlers import Registry
from rota.services.runs import REQUEST_FIELDS, RunRequest, check_deadline, new_run

# A run's own values; every other field of a request is part of its shape.
OWN_FIELDS = frozenset({"payload", "idempotency_key", "run_at", "deadline"})
SHAPE_FIELDS = tuple(name for name in REQUEST_FIELDS if name not in OWN_FIELDS)
_FIELD_SET = frozenset(REQUEST_FIELDS)


def new_runs(
    registry: Registry, requests: Iterable[RunRequest | Mapping[str, Any]], now: datetime | None
) -> list[NewRun]:
    """The runs ``requests`` ask for, in their order (``now``: as for new_run)."""
    shapes: dict[Hashable, NewRun] = {}
    runs: list[NewRun] = []
    for request in requests:
        given = _given_fields(request)
        # The type beside each value: 1, 1.0 and True are equal dict keys, but only one
        # of them is a priority.
        shape = tuple(
            [(name, type(value), value) for name, value in given.items() if name not in OWN_FIELDS]
        )
        try:
            template = shapes.get(shape)
        except TypeError:  # a value that cannot be a key (tags as a list): made alone
            runs.append(new_run(registry, RunRequest.coerce(request), now))
            continue
        if template is None:
            options = {name: value for name, _, value in shape}
            template = shapes[shape] = new_run(registry, RunRequest(**options), now)
        deadline = given.get("deadline")
        if deadline is not None:
            check_deadline(deadline, now)
        runs.append(
            template.sibling(
                given.get("payload"), given.get("idempotency_key"), given.get("run_at"), deadline
            )
        )
    return runs


def _given_fields(request: RunRequest | Mapping[str, Any]) -> Mapping[str, Any]:
    """The fields a request gives; a dict is checked as RunRequest.coerce checks it
    (its keys, and a handler)."""
    if isinstance(request, RunRequest):
        return {name: getattr(request, name) for name in REQUEST_FIELDS}
    if not isinstance(request, dict) or not (request.keys() <= _FIELD_SET and "handler" in request):
        RunRequest.coerce(request)  # raises the error that names what is wrong
        return dict(request)  # another Mapping with the right keys
    return request
