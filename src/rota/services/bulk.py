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

from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from rota.domain.runs import NewRun, RunBatch
from rota.handlers import Registry
from rota.services.runs import REQUEST_FIELDS, RunRequest, check_deadline, new_run

# A run's own values; every other field of a request is part of its shape.
OWN_FIELDS = frozenset({"payload", "idempotency_key", "run_at", "deadline"})
SHAPE_FIELDS = tuple(name for name in REQUEST_FIELDS if name not in OWN_FIELDS)
_FIELD_SET = frozenset(REQUEST_FIELDS)


Requests = Iterable[RunRequest | Mapping[str, Any]]


def new_runs(registry: Registry, requests: Requests, now: datetime | None) -> list[NewRun]:
    """The runs ``requests`` ask for, in their order (``now``: as for new_run)."""
    return list(_made(registry, requests, now))


def run_batch(registry: Registry, requests: Requests, now: datetime | None) -> RunBatch:
    """The runs ``requests`` ask for, made as a store reads them (RunBatch): the same
    runs and the same first error as :func:`new_runs`, raised by the enqueue."""
    given = list(requests)  # a copy: the caller's list may change while the batch is read
    return RunBatch(_made(registry, given, now), len(given), lambda: _unkeyed(given))


def _unkeyed(requests: Sequence[RunRequest | Mapping[str, Any]]) -> bool:
    """Whether no request gives an idempotency key. Only a speed decision (COPY or
    not) rests on it, so a request of any other kind counts as keyed."""
    for request in requests:
        if isinstance(request, dict):
            if request.get("idempotency_key") is not None:
                return False
        elif not isinstance(request, RunRequest) or request.idempotency_key is not None:
            return False
    return True


def _made(registry: Registry, requests: Requests, now: datetime | None) -> Iterator[NewRun]:
    shapes: dict[Hashable, NewRun] = {}
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
            yield new_run(registry, RunRequest.coerce(request), now)
            continue
        if template is None:
            options = {name: value for name, _, value in shape}
            template = shapes[shape] = new_run(registry, RunRequest(**options), now)
        deadline = given.get("deadline")
        if deadline is not None:
            check_deadline(deadline, now)
        yield template.sibling(
            given.get("payload"), given.get("idempotency_key"), given.get("run_at"), deadline
        )


def _given_fields(request: RunRequest | Mapping[str, Any]) -> Mapping[str, Any]:
    """The fields a request gives; a dict is checked as RunRequest.coerce checks it
    (its keys, and a handler)."""
    if isinstance(request, RunRequest):
        return {name: getattr(request, name) for name in REQUEST_FIELDS}
    if not isinstance(request, dict) or not (request.keys() <= _FIELD_SET and "handler" in request):
        RunRequest.coerce(request)  # raises the error that names what is wrong
        return dict(request)  # another Mapping with the right keys
    return request
