"""Workflow definitions and the release rules, as pure functions: random graphs
(hypothesis) for the cycle check and for a simulated run of the trigger rules."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rota.domain.states import RunState
from rota.domain.workflows import (
    StepKind,
    StepSpec,
    TriggerRule,
    WorkflowDefinition,
    WorkflowInvalid,
    check_definition,
    decide,
    definition_from_json,
    find_cycle,
    trigger_verdict,
)


def dag(edges: set[tuple[int, int]], size: int) -> WorkflowDefinition:
    """Steps s0..s{size-1}; an edge (a, b) makes s{a} a parent of s{b}."""
    steps = tuple(
        StepSpec(f"s{i}", "h", after=tuple(f"s{a}" for a, b in sorted(edges) if b == i))
        for i in range(size)
    )
    return WorkflowDefinition("random", steps)


@st.composite
def graphs(draw: st.DrawFn) -> tuple[int, set[tuple[int, int]]]:
    size = draw(st.integers(1, 12))
    pairs = st.tuples(st.integers(0, size - 1), st.integers(0, size - 1))
    edges = draw(st.sets(pairs.filter(lambda pair: pair[0] != pair[1]), max_size=30))
    return size, edges


def has_cycle(size: int, edges: set[tuple[int, int]]) -> bool:
    """Kahn's algorithm, the reference the search is checked against."""
    indegree = {i: sum(1 for _, b in edges if b == i) for i in range(size)}
    ready = [i for i, d in indegree.items() if d == 0]
    seen = 0
    while ready:
        node = ready.pop()
        seen += 1
        for a, b in edges:
            if a == node:
                indegree[b] -= 1
                if indegree[b] == 0:
                    ready.append(b)
    return seen < size


@settings(max_examples=300, deadline=None)
@given(graphs())
def test_a_cycle_is_always_found_and_named_as_a_real_path(graph):
    size, edges = graph
    definition = dag(edges, size)
    cycle = find_cycle({step.name: step.parents for step in definition.steps})
    assert (cycle is not None) == has_cycle(size, edges)
    if cycle is not None:
        assert cycle[0] == cycle[-1]
        for parent, child in pairwise(cycle):
            assert parent in definition.step(child).parents
        with pytest.raises(WorkflowInvalid, match="no cycle"):
            check_definition(definition)
    else:
        check_definition(definition)


@settings(max_examples=300, deadline=None)
@given(graphs(), st.data())
def test_an_acyclic_graph_runs_every_step_once_in_a_topological_order(graph, data):
    size, edges = graph
    edges = {(a, b) for a, b in edges if a < b}  # acyclic by construction
    definition = dag(edges, size)
    states = {s.name: RunState.WAITING if s.parents else RunState.PENDING for s in definition.steps}
    order: list[str] = []
    while True:
        runnable = sorted(name for name, state in states.items() if state is RunState.PENDING)
        if not runnable:
            break
        name = data.draw(st.sampled_from(runnable))  # any ready step may finish first
        order.append(name)
        states[name] = RunState.SUCCEEDED
        states.update(decide(definition, states))
    assert sorted(order) == sorted(states)  # every step, each exactly once
    position = {name: index for index, name in enumerate(order)}
    for a, b in edges:
        assert position[f"s{a}"] < position[f"s{b}"]


@pytest.mark.parametrize(
    ("rule", "parents", "verdict"),
    [
        (TriggerRule.ALL_SUCCEEDED, [RunState.SUCCEEDED, RunState.RUNNING], None),
        (TriggerRule.ALL_SUCCEEDED, [RunState.FAILED, RunState.RUNNING], RunState.SKIPPED),
        (TriggerRule.ALL_SUCCEEDED, [RunState.SUCCEEDED] * 2, RunState.PENDING),
        (TriggerRule.ALL_DONE, [RunState.FAILED, RunState.RUNNING], None),
        (TriggerRule.ALL_DONE, [RunState.FAILED, RunState.SKIPPED], RunState.PENDING),
        (TriggerRule.ANY_SUCCEEDED, [RunState.SUCCEEDED, RunState.RUNNING], None),
        (TriggerRule.ANY_SUCCEEDED, [RunState.SUCCEEDED, RunState.FAILED], RunState.PENDING),
        (TriggerRule.ANY_SUCCEEDED, [RunState.FAILED, RunState.CANCELLED], RunState.SKIPPED),
    ],
)
def test_trigger_rules(rule, parents, verdict):
    assert trigger_verdict(rule, parents) is verdict


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ([StepSpec("a", "h"), StepSpec("a", "h")], "step: 'a'; expected a step name used once"),
        ([StepSpec("a", "h", after=("a",))], "another step \\(not itself\\)"),
        ([StepSpec("a", "h", after=("nope",))], "'nope'; expected the name of a step"),
        ([StepSpec("a", "h", kind=StepKind.MAP)], "over: None; expected the step whose list"),
        ([StepSpec("a", "h", options={"colour": 1})], "options: \\['colour'\\]"),
        ([], "at least one step"),
    ],
)
def test_bad_definitions_are_refused_naming_the_value(steps, message):
    with pytest.raises(WorkflowInvalid, match=message):
        check_definition(WorkflowDefinition("bad", tuple(steps)))


def test_json_round_trip_and_bad_json():
    definition = WorkflowDefinition(
        "etl",
        (
            StepSpec("extract", "x"),
            StepSpec("load", "l", kind=StepKind.MAP, over="extract", options={"queue": "q"}),
            StepSpec("report", "r", after=("load",), trigger=TriggerRule.ALL_DONE),
        ),
    )
    assert definition_from_json(definition.to_json()) == definition
    step = {"name": "a", "handler": "h", "trigger": "sometimes"}
    with pytest.raises(WorkflowInvalid, match="steps\\[0\\]"):
        definition_from_json({"name": "x", "steps": [step]})
    with pytest.raises(WorkflowInvalid, match="steps: 'a'"):
        definition_from_json({"name": "x", "steps": "a"})


def test_a_step_whose_parent_run_is_gone_is_left_undecided():
    definition = WorkflowDefinition(
        "pruned", (StepSpec("a", "h"), StepSpec("b", "h"), StepSpec("c", "h", after=("a", "b")))
    )
    assert decide(definition, {"b": RunState.FAILED, "c": RunState.WAITING}) == {}
