"""``rota.Workflow``: the library's way to write a workflow definition.

    flow = rota.Workflow("nightly-etl")
    extract = flow.step("extract")
    regions = flow.map("load-region", over=extract)
    flow.step("report", handler="send-report", after=[regions], trigger="all_done")

Each call adds a step and returns a reference to pass as a later step's parent. The
definition is checked (cycles, unknown handlers, repeated names) when it is registered
with :meth:`rota.App.workflow`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rota.domain.workflows import (
    StepKind,
    StepSpec,
    TriggerRule,
    WorkflowDefinition,
    WorkflowInvalid,
)


@dataclass(frozen=True)
class StepRef:
    """A step of a :class:`Workflow`, to name as a parent (``after=[ref]``, ``over=ref``)."""

    name: str


Parent = StepRef | str


def _name_of(field: str, parent: Parent) -> str:
    if isinstance(parent, StepRef):
        return parent.name
    if isinstance(parent, str):
        return parent
    raise WorkflowInvalid(field, parent, "a step (what step() or map() returned) or its name")


def _trigger(value: str | TriggerRule) -> TriggerRule:
    try:
        return TriggerRule(value)
    except ValueError:
        allowed = ", ".join(rule.value for rule in TriggerRule)
        raise WorkflowInvalid("trigger", value, allowed) from None


class Workflow:
    def __init__(self, name: str, *, parameters: Mapping[str, Any] | None = None) -> None:
        """``parameters``: a template's JSON Schema of the workflow payload (an object
        schema; ``default`` values fill in what a start leaves out)."""
        self.name = name
        self.parameters = parameters
        self._steps: list[StepSpec] = []

    def step(
        self,
        name: str,
        *,
        handler: str | None = None,
        after: Iterable[Parent] = (),
        trigger: str | TriggerRule = TriggerRule.ALL_SUCCEEDED,
        **options: Any,
    ) -> StepRef:
        """A step that calls ``handler`` (default: the step's name) once its parents
        satisfy ``trigger``. ``options``: queue, priority, max_attempts, timeout, tags."""
        return self._add(name, handler, StepKind.STEP, after, None, trigger, options)

    def map(
        self,
        name: str,
        *,
        over: Parent | None = None,
        handler: str | None = None,
        after: Iterable[Parent] = (),
        trigger: str | TriggerRule = TriggerRule.ALL_SUCCEEDED,
        **options: Any,
    ) -> StepRef:
        """Fan out: one run of ``handler`` per item of ``over``'s list result (each
        item is that run's payload). Steps after it wait for every item (none is fine);
        their ``ctx.parents[name]`` is the list of the items' results, in order."""
        over_name = None if over is None else _name_of("over", over)
        return self._add(name, handler, StepKind.MAP, after, over_name, trigger, options)

    def _add(
        self,
        name: str,
        handler: str | None,
        kind: StepKind,
        after: Iterable[Parent],
        over: str | None,
        trigger: str | TriggerRule,
        options: dict[str, Any],
    ) -> StepRef:
        if isinstance(after, StepRef | str):
            after = [after]
        spec = StepSpec(
            name=name,
            handler=handler if handler is not None else name,
            kind=kind,
            after=tuple(_name_of("after", parent) for parent in after),
            over=over,
            trigger=_trigger(trigger),
            options=dict(options),
        )
        self._steps.append(spec)
        return StepRef(name)

    def definition(self) -> WorkflowDefinition:
        return WorkflowDefinition(self.name, tuple(self._steps), self.parameters)
