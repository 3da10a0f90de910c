"""Workflows as values: a definition (a DAG of steps), its checks, and the pure rules
that release, skip and settle steps. No I/O: the store applies what these decide, in
the transaction that finished the parent (DESIGN.md "Workflows")."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from rota.domain.parameters import apply as apply_parameters
from rota.domain.parameters import check_schema
from rota.domain.runs import check_name
from rota.domain.states import TERMINAL_STATES, RunState
from rota.errors import InvalidArgument

MAX_STEPS = 500
# The options a step may set; the rest come from its handler's registration.
STEP_OPTIONS = frozenset({"queue", "priority", "max_attempts", "timeout", "tags"})

# The most items one map step fans out over (the setting map_max_items); a longer list
# fails the step with this error name.
DEFAULT_MAP_MAX_ITEMS = 20_000
MAP_TOO_LARGE = "MapTooLarge"


class TriggerRule(StrEnum):
    ALL_SUCCEEDED = "all_succeeded"  # every parent succeeded (the default)
    ALL_DONE = "all_done"  # every parent finished, however it ended
    ANY_SUCCEEDED = "any_succeeded"  # every parent finished and at least one succeeded


class StepKind(StrEnum):
    STEP = "step"
    MAP = "map"  # one run per item of the `over` parent's list result


class WorkflowState(StrEnum):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


class WorkflowInvalid(InvalidArgument):
    """A definition that cannot run: a cycle, an unknown parent or handler, a repeated
    step name, a map with no `over`. Nothing was written."""


@dataclass(frozen=True)
class StepSpec:
    name: str
    handler: str
    kind: StepKind = StepKind.STEP
    after: tuple[str, ...] = ()
    over: str | None = None
    trigger: TriggerRule = TriggerRule.ALL_SUCCEEDED
    options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def parents(self) -> tuple[str, ...]:
        """Every step this one waits for: ``after`` and, for a map, ``over``."""
        if self.over is None or self.over in self.after:
            return self.after
        return (*self.after, self.over)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "handler": self.handler,
            "kind": self.kind.value,
            "after": list(self.after),
            "over": self.over,
            "trigger": self.trigger.value,
            "options": dict(self.options),
        }


@dataclass(frozen=True)
class WorkflowDefinition:
    name: str
    steps: tuple[StepSpec, ...]
    # A template's parameters: a JSON Schema of the workflow payload, with defaults
    # (rota.domain.parameters); None: any payload.
    parameters: Mapping[str, Any] | None = None

    def step(self, name: str) -> StepSpec:
        for step in self.steps:
            if step.name == name:
                return step
        raise WorkflowInvalid("step", name, f"a step of workflow {self.name!r}")

    def children(self, name: str) -> list[StepSpec]:
        return [step for step in self.steps if name in step.parents]

    def descendants(self, name: str) -> set[str]:
        found: set[str] = set()
        frontier = [name]
        while frontier:
            for child in self.children(frontier.pop()):
                if child.name not in found:
                    found.add(child.name)
                    frontier.append(child.name)
        return found

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {"name": self.name, "steps": [s.to_json() for s in self.steps]}
        if self.parameters is not None:
            found["parameters"] = dict(self.parameters)
        return found

    def payload_of(self, values: Any) -> Any:
        """A run's workflow payload: ``values`` checked against the parameters, with
        their defaults filled in (InvalidParameter names a misfit); as given if the
        workflow declares none."""
        return values if self.parameters is None else apply_parameters(self.parameters, values)


@dataclass(frozen=True)
class StoredWorkflow:
    """A definition as saved in the database: any process can start it by name."""

    namespace: str
    definition: WorkflowDefinition
    version: int  # 1, then one more each time the saved definition changes
    created_at: datetime
    updated_at: datetime  # when the definition last changed

    @property
    def name(self) -> str:
        return self.definition.name


def _text(where: str, value: Any) -> str:
    if not isinstance(value, str):
        raise WorkflowInvalid(where, value, "a string")
    return value


def _step_from_json(index: int, raw: Any) -> StepSpec:
    where = f"steps[{index}]"
    if not isinstance(raw, Mapping):
        raise WorkflowInvalid(where, raw, "an object with name and handler")
    after = raw.get("after") or []
    if not isinstance(after, list):
        raise WorkflowInvalid(f"{where}.after", after, "a list of step names")
    options = raw.get("options") or {}
    if not isinstance(options, Mapping):
        raise WorkflowInvalid(f"{where}.options", options, "an object")
    over = raw.get("over")
    try:
        kind = StepKind(raw.get("kind", "step"))
        trigger = TriggerRule(raw.get("trigger", "all_succeeded"))
    except ValueError:
        allowed = "kind step|map, trigger " + "|".join(rule.value for rule in TriggerRule)
        chosen = {key: raw.get(key) for key in ("kind", "trigger")}
        raise WorkflowInvalid(where, chosen, allowed) from None
    name = _text(f"{where}.name", raw.get("name"))
    handler = raw.get("handler")
    return StepSpec(
        name=name,
        # As in the library: a step calls the handler of its own name unless told.
        handler=name if handler is None else _text(f"{where}.handler", handler),
        kind=kind,
        after=tuple(_text(f"{where}.after", parent) for parent in after),
        over=None if over is None else _text(f"{where}.over", over),
        trigger=trigger,
        options=dict(options),
    )


def definition_from_json(raw: Any) -> WorkflowDefinition:
    """A definition from its JSON form (the API's body, a stored workflow run); types
    only: :func:`check_definition` checks the graph."""
    if not isinstance(raw, Mapping):
        raise WorkflowInvalid("workflow", raw, "an object with name and steps")
    steps = raw.get("steps")
    if not isinstance(steps, list):
        raise WorkflowInvalid("steps", steps, "a list of steps")
    name = _text("name", raw.get("name"))
    parameters = raw.get("parameters")
    return WorkflowDefinition(
        name, tuple(_step_from_json(i, s) for i, s in enumerate(steps)), parameters
    )


def find_cycle(parents: Mapping[str, Sequence[str]]) -> list[str] | None:
    """A cycle as a path that returns to its start (``[a, b, c, a]``: a before b before
    c before a), or None. Iterative depth-first search: deep graphs need no recursion."""
    colour: dict[str, int] = {}  # 1: on the current path, 2: finished
    for root in parents:
        if root in colour:
            continue
        path: list[str] = [root]
        stack: list[Iterator[str]] = [iter(_children_of(parents, root))]
        colour[root] = 1
        while stack:
            child = next(stack[-1], None)
            if child is None:
                colour[path.pop()] = 2
                stack.pop()
            elif colour.get(child) == 1:
                return [*path[path.index(child) :], child]
            elif child not in colour:
                colour[child] = 1
                path.append(child)
                stack.append(iter(_children_of(parents, child)))
    return None


def _children_of(parents: Mapping[str, Sequence[str]], name: str) -> list[str]:
    return sorted(child for child, its in parents.items() if name in its)


def check_definition(
    definition: WorkflowDefinition, handler_known: Callable[[str], bool] | None = None
) -> None:
    """Refuse a definition that cannot run, naming what is wrong."""
    check_name("workflow", definition.name)
    if definition.name.isdigit():
        # `rota workflows show 42` means workflow run 42: a name is never only digits.
        raise WorkflowInvalid("workflow", definition.name, "a name that is not only digits")
    if not definition.steps:
        raise WorkflowInvalid("steps", [], "at least one step")
    if definition.parameters is not None:
        check_schema(definition.parameters)
    if len(definition.steps) > MAX_STEPS:
        raise WorkflowInvalid("steps", len(definition.steps), f"at most {MAX_STEPS} steps")
    names: set[str] = set()
    for step in definition.steps:
        check_name("step", step.name)
        if step.name in names:
            raise WorkflowInvalid("step", step.name, "a step name used once per workflow")
        names.add(step.name)
    for step in definition.steps:
        _check_step(step, names, handler_known)
    cycle = find_cycle({step.name: step.parents for step in definition.steps})
    if cycle is not None:
        raise WorkflowInvalid("steps", " → ".join(cycle), "no cycle (a workflow is a DAG)")


def _check_step(
    step: StepSpec, names: set[str], handler_known: Callable[[str], bool] | None
) -> None:
    where = f"step {step.name!r}"
    if handler_known is not None and not handler_known(step.handler):
        raise WorkflowInvalid(f"{where} handler", step.handler, "a registered handler")
    if step.kind is StepKind.MAP and step.over is None:
        raise WorkflowInvalid(f"{where} over", None, "the step whose list result it maps over")
    if step.kind is StepKind.STEP and step.over is not None:
        raise WorkflowInvalid(f"{where} over", step.over, "only on a map step")
    for parent in step.parents:
        if parent == step.name:
            raise WorkflowInvalid(f"{where} after", parent, "another step (not itself)")
        if parent not in names:
            raise WorkflowInvalid(f"{where} after", parent, "the name of a step in this workflow")
    unknown = set(step.options) - STEP_OPTIONS
    if unknown:
        raise WorkflowInvalid(f"{where} options", sorted(unknown), ", ".join(sorted(STEP_OPTIONS)))


def is_done(state: RunState) -> bool:
    return state in TERMINAL_STATES


def trigger_verdict(rule: TriggerRule, parent_states: Sequence[RunState]) -> RunState | None:
    """What a Waiting step becomes given its parents: Pending (released), Skipped (its
    rule can no longer be met), or None (not yet decided)."""
    succeeded = [state is RunState.SUCCEEDED for state in parent_states]
    all_done = all(is_done(state) for state in parent_states)
    if rule is TriggerRule.ALL_SUCCEEDED:
        if any(is_done(s) and s is not RunState.SUCCEEDED for s in parent_states):
            return RunState.SKIPPED
        return RunState.PENDING if all(succeeded) else None
    if not all_done:
        return None
    if rule is TriggerRule.ALL_DONE or any(succeeded):
        return RunState.PENDING
    return RunState.SKIPPED


def decide(definition: WorkflowDefinition, states: Mapping[str, RunState]) -> dict[str, RunState]:
    """Each Waiting step whose trigger rule is now decided, and its verdict. A map
    step's Pending means "expand it". Skips cascade: call again after applying."""
    verdicts: dict[str, RunState] = {}
    for step in definition.steps:
        if states.get(step.name) is not RunState.WAITING:
            continue
        if any(parent not in states for parent in step.parents):
            # A parent's run is gone (pruned past retention while this step waited on
            # another parent): nothing can decide the step; it waits for a cancel.
            continue
        verdict = trigger_verdict(step.trigger, [states[parent] for parent in step.parents])
        if verdict is not None:
            verdicts[step.name] = verdict
    return verdicts


def map_settled(item_states: Sequence[RunState]) -> RunState | None:
    """A map's own state once every item finished: Succeeded if all did (or there were
    none), else Failed; None while any item is unfinished."""
    if not all(is_done(state) for state in item_states):
        return None
    if all(state is RunState.SUCCEEDED for state in item_states):
        return RunState.SUCCEEDED
    return RunState.FAILED


def map_items(step: StepSpec, over_result: Any, max_items: int) -> list[Any] | str:
    """The items a map fans out over, or the error that fails it: not a list, or a
    list longer than ``max_items`` (MapTooLarge: one completing transaction would
    create them all, and a 1 MiB start payload holds ~500k small items)."""
    if isinstance(over_result, list):
        if len(over_result) > max_items:
            return (
                f"{MAP_TOO_LARGE}: map step {step.name!r} got {len(over_result)} items from "
                f"step {step.over!r}; at most {max_items} (map_max_items)"
            )
        return over_result
    kind = "null" if over_result is None else type(over_result).__name__
    return f"map step {step.name!r} needs a list from step {step.over!r}; it returned {kind}"


def workflow_state(step_states: Iterable[RunState], cancelled: bool) -> WorkflowState:
    """A workflow run's state, derived from its steps' latest runs."""
    states = list(step_states)
    if cancelled and all(is_done(state) for state in states):
        return WorkflowState.CANCELLED
    if not all(is_done(state) for state in states):
        return WorkflowState.RUNNING
    if cancelled or RunState.CANCELLED in states:
        return WorkflowState.CANCELLED
    failed = {RunState.FAILED, RunState.TIMED_OUT, RunState.DEAD_LETTERED, RunState.SKIPPED}
    if any(state in failed for state in states):
        return WorkflowState.FAILED
    return WorkflowState.SUCCEEDED
