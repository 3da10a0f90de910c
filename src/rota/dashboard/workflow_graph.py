"""A workflow run's DAG laid out for a server-rendered SVG: each step in the column of
its longest path from a root (parents always to the left), in definition order within
a column; edges from a parent's right side to a child's left side. Pure: the template
draws what this returns."""

from __future__ import annotations

from dataclasses import dataclass

from rota.domain.workflow_runs import StepView, WorkflowRunView

NODE_WIDTH = 200
NODE_HEIGHT = 56
COLUMN_GAP = 60
ROW_GAP = 24
MARGIN = 8


@dataclass(frozen=True)
class Node:
    step: StepView
    kind: str
    parents: tuple[str, ...]
    x: int
    y: int


@dataclass(frozen=True)
class Edge:
    parent: str
    child: str
    x1: int
    y1: int
    x2: int
    y2: int


@dataclass(frozen=True)
class Layout:
    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    width: int
    height: int
    node_width: int = NODE_WIDTH
    node_height: int = NODE_HEIGHT


def layout(view: WorkflowRunView) -> Layout:
    specs = {spec.name: spec for spec in view.definition.steps}
    column: dict[str, int] = {}
    for spec in view.definition.steps:  # a definition lists parents before children
        column[spec.name] = 1 + max((column.get(p, 0) for p in spec.parents), default=-1)
    rows: dict[int, int] = {}
    nodes: dict[str, Node] = {}
    for step in view.steps:
        col = column.get(step.name, 0)
        row = rows.get(col, 0)
        rows[col] = row + 1
        spec = specs[step.name]
        nodes[step.name] = Node(
            step,
            spec.kind.value,
            spec.parents,
            MARGIN + col * (NODE_WIDTH + COLUMN_GAP),
            MARGIN + row * (NODE_HEIGHT + ROW_GAP),
        )
    edges = tuple(
        Edge(
            parent,
            node.step.name,
            nodes[parent].x + NODE_WIDTH,
            nodes[parent].y + NODE_HEIGHT // 2,
            node.x,
            node.y + NODE_HEIGHT // 2,
        )
        for node in nodes.values()
        for parent in node.parents
        if parent in nodes
    )
    columns = 1 + max(column.values(), default=0)
    deepest = max(rows.values(), default=1)
    return Layout(
        tuple(nodes.values()),
        edges,
        2 * MARGIN + columns * NODE_WIDTH + (columns - 1) * COLUMN_GAP,
        2 * MARGIN + deepest * NODE_HEIGHT + (deepest - 1) * ROW_GAP,
    )
