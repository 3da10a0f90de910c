"""What a workflow run looks like when read: its steps' current runs, its derived state
and duration, and its graph (nodes and edges with each step's state)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from rota.domain.states import RunState
from rota.domain.workflows import WorkflowDefinition, WorkflowState, workflow_state


@dataclass(frozen=True)
class StepView:
    name: str
    run_id: int | None  # the step's current run (a replay's, after one)
    state: RunState
    error: str | None = None
    # A map's items by state (their current runs); None on a plain step.
    items: Mapping[str, int] | None = None


@dataclass(frozen=True)
class WorkflowRunView:
    id: int
    name: str
    state: WorkflowState
    created_at: datetime
    finished_at: datetime | None
    definition: WorkflowDefinition
    steps: Sequence[StepView] = field(default_factory=tuple)
    namespace: str = "default"  # where it and its steps run

    @property
    def duration(self) -> float | None:
        """Seconds from start to the last step's end; None while it runs."""
        if self.finished_at is None:
            return None
        return (self.finished_at - self.created_at).total_seconds()

    def graph(self) -> dict[str, Any]:
        """Nodes (each step with its state) and edges (parent -> child)."""
        return {
            "workflow_run_id": self.id,
            "state": self.state.value,
            "nodes": [
                {
                    "id": step.name,
                    "kind": self.definition.step(step.name).kind.value,
                    "state": step.state.value,
                    "run_id": step.run_id,
                    "items": dict(step.items) if step.items is not None else None,
                }
                for step in self.steps
            ],
            "edges": [
                {"from": parent, "to": spec.name}
                for spec in self.definition.steps
                for parent in spec.parents
            ],
        }


def view_from_rows(
    run_row: Mapping[str, Any], definition: WorkflowDefinition, step_rows: Sequence[Any]
) -> WorkflowRunView:
    """The view of a workflow run from its row and every run of its steps (oldest
    first: the last run per step, or per map item, is the current one)."""
    current: dict[str, Mapping[str, Any]] = {}
    items: dict[str, dict[int, Mapping[str, Any]]] = {}
    for row in step_rows:
        if row["map_index"] is None:
            current[row["step_name"]] = row
        else:
            items.setdefault(row["step_name"], {})[row["map_index"]] = row
    steps = [_step_view(spec.name, current, items, spec.kind.value) for spec in definition.steps]
    state = workflow_state((step.state for step in steps), run_row["cancelled_at"] is not None)
    ends = [row["finished_at"] for row in current.values() if row["finished_at"] is not None]
    finished_at = max(ends) if ends and state is not WorkflowState.RUNNING else None
    return WorkflowRunView(
        run_row["id"],
        run_row["name"],
        state,
        run_row["created_at"],
        finished_at,
        definition,
        tuple(steps),
        run_row["namespace"],
    )


def _step_view(
    name: str,
    current: Mapping[str, Mapping[str, Any]],
    items: Mapping[str, Mapping[int, Mapping[str, Any]]],
    kind: str,
) -> StepView:
    row = current.get(name)
    counts: dict[str, int] | None = None
    if kind == "map":
        counts = {}
        for item in items.get(name, {}).values():
            counts[item["state"]] = counts.get(item["state"], 0) + 1
    if row is None:  # not expected: every step has a row from the start
        return StepView(name, None, RunState.WAITING, None, counts)
    return StepView(name, row["id"], RunState(row["state"]), row["error"], counts)
