"""Workflow runs on the one SQL store: starting one, the release protocol that runs
inside every transaction that finishes a step (a completion, the reaper, a cancel),
cancelling a workflow run, replaying a step into it, and reading it back.

The release protocol (DESIGN.md "Workflows"): the transaction that moved a step to a
finished state, under that step's fence, locks its workflow run's row, counts a map
item off its map, then applies domain/workflows.py's verdicts until none is left:
maps whose items all finished settle, Waiting steps are released (Pending), skipped,
or (maps) fanned out. Either all of it commits with the parent's outcome, or none.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from rota.domain.runs import NewRun, replay_request
from rota.domain.states import RunState
from rota.domain.values import encode_json
from rota.domain.workflow_runs import WorkflowRunView, view_from_rows
from rota.domain.workflows import (
    StepKind,
    StepSpec,
    WorkflowDefinition,
    WorkflowState,
    decide,
    definition_from_json,
    map_items,
    map_settled,
    workflow_state,
)
from rota.errors import InvalidTransition, WorkflowRunNotFound
from rota.store.core.base import run_item
from rota.store.core.reads import CoreReads
from rota.store.dialect import Row, Session

CANCELLED_WITH_WORKFLOW = "cancelled: its workflow run was cancelled"


def _step_input(parents: Mapping[str, Any], workflow_payload: Any) -> str:
    return json.dumps({"parents": dict(parents), "workflow_payload": workflow_payload})


async def release_after(session: Session, run_ids: Iterable[int], map_max_items: int) -> None:
    """Advance the workflow runs of the steps among ``run_ids`` that just finished, in
    the caller's transaction. Runs outside any workflow cost one indexed read. A map
    fans out over at most ``map_max_items`` items (the setting)."""
    ids = sorted(set(run_ids))
    if not ids:
        return
    rows = await session.rows("workflow_steps_of", {"ids": ids})
    finished: dict[int, list[Row]] = {}
    for row in rows:
        if RunState(row["state"]).is_terminal:
            finished.setdefault(row["workflow_run_id"], []).append(row)
    for workflow_run_id in sorted(finished):  # lock order: no two releases deadlock
        await _release(session, workflow_run_id, finished[workflow_run_id], map_max_items)


async def _release(
    session: Session, workflow_run_id: int, finished: Sequence[Row], map_max_items: int
) -> None:
    [workflow_run] = await session.rows("lock_workflow_run", {"id": workflow_run_id})
    counted = await _count_off_items(session, workflow_run_id, finished)
    if counted.may_decide:
        await advance(session, workflow_run, map_max_items, announce=counted.was_running)


@dataclass(frozen=True)
class _Counted:
    may_decide: bool  # a verdict may be due: advance() must look
    was_running: bool  # the workflow run was running before this transaction


async def _count_off_items(
    session: Session, workflow_run_id: int, finished: Sequence[Row]
) -> _Counted:
    """Count the finished map items off their maps, one statement per map (not per
    item: a completion batch of a big map carries many).

    No verdict can be due when only items finished and each of their maps still has
    items open: every release ends at a fixed point of ``decide()``, and an open map
    reads as Running before and after. The workflow run was running before if a step
    of its own finished here, or an item of a map still counting its items; an item
    whose map had already ended (a cancel ended it while the item ran) finishes
    nothing the derived state sees."""
    items = Counter(row["step_name"] for row in finished if row["map_index"] is not None)
    own_step = any(row["map_index"] is None for row in finished)
    may_decide, was_running = own_step, own_step
    for step_name, count in sorted(items.items()):
        params = {"workflow_run_id": workflow_run_id, "step_name": step_name, "change": -count}
        counted = await session.rows("map_item_finished", params)
        may_decide = may_decide or not counted or counted[0]["open_items"] <= 0
        was_running = was_running or bool(counted)
    return _Counted(may_decide, was_running)


async def advance(
    session: Session, workflow_run: Row, map_max_items: int, announce: bool = True
) -> None:
    """Apply verdicts until the workflow run has none left (a skip or a settled map
    can decide the steps below it). If it was running (``announce``) and is now
    final, its ``workflow.finished`` event goes to the webhook outbox here, in the
    transaction that made it final: once per finish."""
    definition = definition_from_json(workflow_run["definition"])
    while True:
        names = [step.name for step in definition.steps]
        params = {"workflow_run_id": workflow_run["id"], "names": names}
        rows = await session.rows("step_rows", params)
        current = {row["step_name"]: row for row in rows}  # the last row per step
        if await _settle_maps(session, workflow_run["id"], current):
            continue
        verdicts = decide(definition, {name: _state(row) for name, row in current.items()})
        if not verdicts:
            if announce:
                await _announce_if_finished(session, workflow_run, current)
            return
        for name, verdict in verdicts.items():
            step = definition.step(name)
            if verdict is RunState.SKIPPED:
                rule = step.trigger.value
                await _settle(session, current[name], RunState.SKIPPED, None, f"skipped: {rule}")
            elif step.kind is StepKind.MAP:
                await _fan_out(session, step, current, workflow_run["payload"], map_max_items)
            else:
                step_input = _step_input(_results(step.parents, current), workflow_run["payload"])
                params = {"id": current[name]["id"], "step_input": step_input}
                await session.rows("release_step", params)


async def _announce_if_finished(
    session: Session, workflow_run: Row, current: Mapping[str, Row]
) -> None:
    cancelled = workflow_run["cancelled_at"] is not None
    state = workflow_state((_state(row) for row in current.values()), cancelled)
    if state is not WorkflowState.RUNNING:
        params = {"id": workflow_run["id"], "state": state.value}
        await session.rows("workflow_finished_event", params)


def _state(row: Row) -> RunState:
    """A step's state for the trigger rules: a map that fanned out (its row still
    Waiting, counting its items) is running."""
    if row["state"] == RunState.WAITING.value and row["open_items"] is not None:
        return RunState.RUNNING
    return RunState(row["state"])


def _results(parents: Iterable[str], current: Mapping[str, Row]) -> dict[str, Any]:
    return {parent: current[parent]["result"] for parent in parents}


async def _settle(
    session: Session, row: Row, state: RunState, result: Any, error: str | None
) -> None:
    params = {
        "id": row["id"],
        "state": state.value,
        "result": None if result is None else json.dumps(result),
        "error": error,
    }
    await session.rows("settle_step", params)


async def _settle_maps(session: Session, workflow_run_id: int, current: Mapping[str, Row]) -> bool:
    """Settle every fanned-out map whose items all finished; True if one did."""
    settled = False
    for name, row in current.items():
        if row["state"] != RunState.WAITING.value or row["open_items"] != 0:
            continue
        params = {"workflow_run_id": workflow_run_id, "step_name": name}
        latest = {item["map_index"]: item for item in await session.rows("map_item_rows", params)}
        ordered = [latest[index] for index in sorted(latest)]
        state = map_settled([RunState(item["state"]) for item in ordered])
        if state is RunState.SUCCEEDED:
            await _settle(session, row, state, [item["result"] for item in ordered], None)
        else:
            failed = sum(item["state"] != RunState.SUCCEEDED.value for item in ordered)
            await _settle(session, row, RunState.FAILED, None, f"{failed} map item(s) failed")
        settled = True
    return settled


async def _fan_out(
    session: Session,
    step: StepSpec,
    current: Mapping[str, Row],
    workflow_payload: Any,
    map_max_items: int,
) -> None:
    assert step.over is not None  # check_definition refused a map without one
    items = map_items(step, current[step.over]["result"], map_max_items)
    row = current[step.name]
    if isinstance(items, str):
        await _settle(session, row, RunState.FAILED, None, items)
        return
    others = [parent for parent in step.parents if parent != step.over]
    step_input = _step_input(_results(others, current), workflow_payload)
    texts = [encode_json(f"{step.over} result[{i}]", item) for i, item in enumerate(items)]
    if texts:
        params = {"id": row["id"], "items": texts, "step_input": step_input}
        await session.rows("insert_map_items", params)
    await session.rows("open_map", {"id": row["id"], "count": len(texts), "step_input": None})


async def start_workflow_in(
    session: Session,
    definition: WorkflowDefinition,
    payload_json: str,
    steps: Sequence[NewRun],
    aging_seconds: float,
    namespace: str = "default",
    idempotency_key: str | None = None,
) -> int:
    """Create a workflow run in ``namespace`` on ``session``: its row, and one run per
    step (``steps`` in the order of ``definition.steps``, in the same namespace): steps
    with no parents Pending, the rest Waiting. A repeated ``idempotency_key`` (per
    namespace and workflow) creates nothing and returns the first one's id. An event's
    publish starts its subscribed workflows this way, in its transaction."""
    params = {
        "namespace": namespace,
        "name": definition.name,
        "definition": json.dumps(definition.to_json()),
        "payload": payload_json,
        "idempotency_key": idempotency_key,
    }
    inserted = await session.rows("insert_workflow_run", params)
    if not inserted:
        [first] = await session.rows("workflow_run_by_key", params)
        return int(first["id"])
    workflow_run_id = int(inserted[0]["id"])
    workflow_payload = json.loads(payload_json)
    items = [
        _step_row(run, spec, workflow_run_id, workflow_payload)
        for spec, run in zip(definition.steps, steps, strict=True)
    ]
    await session.batch("insert_steps", items, {"aging_seconds": aging_seconds})
    return workflow_run_id


class CoreWorkflows(CoreReads):
    async def start_workflow_run(
        self,
        definition: WorkflowDefinition,
        payload_json: str,
        steps: Sequence[NewRun],
        now: datetime | None,
        namespace: str = "default",
        idempotency_key: str | None = None,
    ) -> int:
        """Create a workflow run in a transaction of its own (:func:`start_workflow_in`)."""
        return await self._d.in_transaction(
            now,
            lambda session: start_workflow_in(
                session,
                definition,
                payload_json,
                steps,
                self.aging_seconds,
                namespace,
                idempotency_key,
            ),
        )

    async def cancel_workflow_run(self, workflow_run_id: int, now: datetime | None) -> None:
        """Cancel every unfinished step. Steps a worker holds are asked to stop in a
        second transaction: the first holds the workflow run's lock, and a completion
        locks its run before that lock (the same order in both would need the run
        locked first, which a cancel cannot know)."""

        async def cancel(session: Session) -> None:
            locked = await session.rows("lock_workflow_run", {"id": workflow_run_id})
            if not locked:
                raise WorkflowRunNotFound(workflow_run_id)
            [left] = await session.rows("unfinished_steps", {"id": workflow_run_id})
            ended_alone = not left["unfinished"] and not left["cancelled"]
            if ended_alone and locked[0]["cancelled_at"] is None:
                # Succeeded or failed: a cancel now would rewrite a finished history (a
                # finished single run refuses one too). A cancelled one may be asked again.
                raise InvalidTransition(workflow_run_id, "finished", "cancel", "workflow run")
            params = {"id": workflow_run_id, "error": CANCELLED_WITH_WORKFLOW}
            if await session.rows("cancel_workflow_run", params):
                # It was running; with no step held by a worker it is final now.
                [workflow_run] = await session.rows("lock_workflow_run", {"id": workflow_run_id})
                await advance(session, workflow_run, self.map_max_items)

        await self._d.in_transaction(now, cancel)
        await self._d.write("cancel_workflow_active", {"id": workflow_run_id}, now)

    async def replay_workflow_step(self, run_id: int, step: Row, now: datetime | None) -> int:
        """A replay of a step: a fresh run in the step's place, and the steps its end
        skipped (and its map, for an item) waiting again."""
        new_run = replay_request(run_id, await self.get_run(run_id))

        async def replay(session: Session) -> int:
            lock = {"id": step["workflow_run_id"]}
            [workflow_run] = await session.rows("lock_workflow_run", lock)
            item = {
                **run_item(new_run),
                "state": RunState.PENDING.value,
                "workflow_run_id": step["workflow_run_id"],
                "step_name": step["step_name"],
                "map_index": step["map_index"],
                "step_input": json.dumps(step["step_input"]),
            }
            shared = {"aging_seconds": self.aging_seconds}
            inserted = await session.batch("insert_steps", [item], shared)
            if not inserted:  # replayed before: the key found that replay
                keys = {"keys": [new_run.idempotency_key]}
                return int((await session.rows("existing_by_idempotency_key", keys))[0]["id"])
            definition = definition_from_json(workflow_run["definition"])
            reopen = {
                "workflow_run_id": step["workflow_run_id"],
                "names": sorted(definition.descendants(step["step_name"])),
                "map_step": step["step_name"] if step["map_index"] is not None else None,
            }
            await session.rows("reopen_steps", reopen)
            await advance(session, workflow_run, self.map_max_items)
            return int(inserted[0]["id"])

        return await self._d.in_transaction(now, replay)

    async def prune_workflow_runs(
        self, older_than: datetime, limit: int, leader_term: int | None = None
    ) -> int:
        """Delete finished workflow runs whose every step ended before ``older_than``,
        with their steps' runs, attempts and logs (the steps are never pruned one by
        one: a workflow run is kept or gone whole). A leader duty, fenced by its term."""

        async def prune(session: Session) -> int:
            if not await self._term_holds(session, leader_term):
                return 0
            params = {"older_than": older_than, "limit": limit}
            ids = [row["id"] for row in await session.rows("workflow_runs_to_prune", params)]
            for workflow_run_id in ids:  # id order: the order every release locks in
                await session.rows("lock_workflow_run", {"id": workflow_run_id})
            if not ids:
                return 0
            gone = await session.rows("prune_workflow_runs", {**params, "ids": ids})
            return len(gone)

        return await self._d.in_transaction(None, prune)

    async def workflow_step_of(self, run_id: int) -> Row | None:
        rows = await self._d.rows("workflow_steps_of", {"ids": [run_id]})
        return rows[0] if rows else None

    async def workflow_run(self, workflow_run_id: int) -> WorkflowRunView:
        found = await self._d.rows("workflow_runs_by_id", {"id": workflow_run_id})
        if not found:
            raise WorkflowRunNotFound(workflow_run_id)
        row = found[0]
        steps = await self._d.rows("workflow_run_steps", {"id": workflow_run_id})
        return view_from_rows(row, definition_from_json(row["definition"]), steps)

    async def list_workflow_runs(
        self,
        name: str | None,
        limit: int,
        namespace: str | None = None,
        namespaces: Sequence[str] | None = None,
    ) -> list[Row]:
        params = {
            "name": name,
            "limit": limit,
            "namespace": namespace,
            "namespaces": None if namespaces is None else sorted(namespaces),
        }
        return await self._d.rows("workflow_runs_recent", params)


def _step_row(
    run: NewRun, spec: StepSpec, workflow_run_id: int, workflow_payload: Any
) -> dict[str, Any]:
    root = not spec.parents
    return {
        **run_item(run),
        "state": (RunState.PENDING if root else RunState.WAITING).value,
        "workflow_run_id": workflow_run_id,
        "step_name": spec.name,
        "map_index": None,
        "step_input": _step_input({}, workflow_payload) if root else None,
    }
