"""A workflow run's graph as text: Mermaid, Graphviz dot, or an indented list. Pure:
the input is :meth:`WorkflowRunView.graph`'s dict (the API's /graph body)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

FORMATS = ("mermaid", "dot", "text")
_UNSAFE = re.compile(r"[^A-Za-z0-9_]")


def _node_id(name: str) -> str:
    """Step names may hold . : - which Mermaid ids may not; a prefix keeps them apart
    from Mermaid's keywords (end, graph)."""
    return "s_" + _UNSAFE.sub("_", name)


def _label(node: Mapping[str, Any]) -> str:
    items = node.get("items") or {}
    counts = ", ".join(f"{count} {state}" for state, count in sorted(items.items()))
    suffix = f" [{counts}]" if counts else ""
    return f"{node['id']}: {node['state']}{suffix}"


def render(graph: Mapping[str, Any], fmt: str) -> str:
    if fmt == "mermaid":
        lines = ["flowchart TD"]
        lines += [f'    {_node_id(n["id"])}["{_label(n)}"]' for n in graph["nodes"]]
        lines += [f"    {_node_id(e['from'])} --> {_node_id(e['to'])}" for e in graph["edges"]]
        return "\n".join(lines)
    if fmt == "dot":
        lines = [f"digraph workflow_run_{graph['workflow_run_id']} {{"]
        lines += [
            f"    {json.dumps(n['id'])} [label={json.dumps(_label(n))}];" for n in graph["nodes"]
        ]
        lines += [f"    {json.dumps(e['from'])} -> {json.dumps(e['to'])};" for e in graph["edges"]]
        return "\n".join([*lines, "}"])
    if fmt == "text":
        parents: dict[str, list[str]] = {}
        for edge in graph["edges"]:
            parents.setdefault(edge["to"], []).append(edge["from"])
        lines = [f"workflow run {graph['workflow_run_id']}: {graph['state']}"]
        for node in graph["nodes"]:
            after = parents.get(node["id"])
            lines.append(f"  {_label(node)}" + (f"  (after {', '.join(after)})" if after else ""))
        return "\n".join(lines)
    raise ValueError(f"format {fmt!r}: expected one of {', '.join(FORMATS)}")
