"""Bulk actions: cancel, requeue, replay or delete every run a filter matches (issue 29).

The filter is the run listing's (:class:`RunSearch`: namespaces, states, handler, queue,
tag, job, created range, text, owner, labels, priority), narrowed to the states the
action may act on (rota.domain.bulk_actions). :func:`preview` counts what it matches
now; :func:`run_action` checks that count against the one the caller confirmed, then
walks.

The walk, and what happens to runs that change meanwhile:

- It starts at the newest run the count saw (``top_id``) and goes down by id, a keyset
  page of :data:`BATCH_SIZE` ids at a time, the filter applied again to each page. So it
  never loses its place, however long it takes, and never meets the runs a requeue or a
  replay makes (their ids are higher), nor runs enqueued after it began.
- Each page is acted on at once and on its own: delete as one statement per page;
  cancel, requeue and replay run by run, each run in a short transaction of its own (the
  single-run writes, with their rules for workflows and the outbox). No transaction
  grows with the action, and an action stopped halfway leaves what it did done.
- A run that left the filter before the walk came to it (a pending run that started,
  a dead letter replayed by someone else) is not touched; one whose state no longer
  allows the action when its turn comes (a run that finished between the page's read
  and its cancel) is refused. Both are counted as skipped (BulkResult). A run that came
  to match the filter below ``top_id`` while the walk went is acted on as well.
- Requeue and replay are idempotent per run (the fresh run's key is derived from the
  old one), so running the same action again makes no second copy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable

from rota.clock import Clock
from rota.domain.bulk_actions import (
    BATCH_SIZE,
    BulkAction,
    BulkPreview,
    BulkResult,
    action_states,
    skipped_count,
)
from rota.domain.runs import Run
from rota.domain.search import RunSearch
from rota.errors import CountChanged, InvalidArgument, InvalidTransition, RunNotFound
from rota.services import runs as run_service
from rota.store.port import Store

# Told after each page: (runs done so far, affected so far, skipped so far).
Progress = Callable[[int, int, int], Awaitable[None]]


async def preview(
    store: Store, action: BulkAction, search: RunSearch, job: tuple[str, str] | None = None
) -> BulkPreview:
    """How many runs ``action`` would act on now (``job`` = (namespace, name): one
    job's runs, none if there is no such job)."""
    narrowed = await _narrowed(store, action, search, job)
    if narrowed is None:
        return BulkPreview(action, 0, None)
    count, top_id = await store.bulk.count_matching_runs(narrowed)
    return BulkPreview(action, count, top_id)


async def run_action(
    store: Store,
    clock: Clock,
    action: BulkAction,
    search: RunSearch,
    expected_count: int,
    job: tuple[str, str] | None = None,
    correlation_id: str | None = None,
    progress: Progress | None = None,
    batch_size: int = BATCH_SIZE,
) -> BulkResult:
    """Act on every run the filter matches, once the count the caller confirmed
    (``expected_count``, from :func:`preview`) is still the count; else CountChanged
    and nothing is done."""
    if isinstance(expected_count, bool) or not isinstance(expected_count, int):
        raise InvalidArgument("expected_count", expected_count, "a whole number of runs")
    if not 1 <= batch_size <= BATCH_SIZE:
        raise InvalidArgument("batch_size", batch_size, f"1-{BATCH_SIZE}")
    narrowed = await _narrowed(store, action, search, job)
    count, top_id = (
        (0, None) if narrowed is None else await store.bulk.count_matching_runs(narrowed)
    )
    if expected_count != count:
        raise CountChanged(expected_count, count)
    affected = refused = batches = 0
    if narrowed is not None and top_id is not None:
        page = dataclasses.replace(narrowed, before_id=top_id + 1, limit=batch_size)
        while runs := await store.search_runs(page):
            done, skipped = await _act(store, clock, action, runs, search, correlation_id)
            affected, refused, batches = affected + done, refused + skipped, batches + 1
            if progress is not None:
                await progress(affected + refused, affected, refused)
            page = dataclasses.replace(page, before_id=runs[-1].id)
    return BulkResult(action, count, affected, skipped_count(count, affected, refused), batches)


async def _narrowed(
    store: Store, action: BulkAction, search: RunSearch, job: tuple[str, str] | None
) -> RunSearch | None:
    """The search with the action's states, checked; None when it names a job that is
    not there (or outside the caller's namespaces): then nothing matches."""
    narrowed = dataclasses.replace(
        search, states=action_states(action, search.states), before_id=None, limit=BATCH_SIZE
    )
    run_service.check_search(narrowed)
    if job is None:
        return narrowed
    found = await store.get_job(*job)
    if found is None or (search.namespaces is not None and job[0] not in search.namespaces):
        return None
    return dataclasses.replace(narrowed, job_id=found.id)


async def _act(
    store: Store,
    clock: Clock,
    action: BulkAction,
    runs: list[Run],
    search: RunSearch,
    correlation_id: str | None,
) -> tuple[int, int]:
    """Act on one page: (runs changed, runs refused)."""
    if action is BulkAction.DELETE:
        deleted = await store.bulk.delete_finished_runs([run.id for run in runs])
        return deleted, len(runs) - deleted
    done = 0
    for run in runs:
        try:
            if action is BulkAction.CANCEL:
                await store.request_cancel(run.id, clock.db_now())
            else:  # requeue and replay: a fresh run (a workflow step takes its place)
                await run_service.replay(store, clock, run.id, search.namespaces, correlation_id)
            done += 1
        except (InvalidTransition, RunNotFound):
            pass  # its state moved on (or it was deleted) since the page was read
    return done, len(runs) - done
