"""Routes are HTTP only: they call use cases, never the store (DESIGN.md, "Layers")."""

from __future__ import annotations

import ast
from pathlib import Path

import rota.api.routes

ROUTES = Path(rota.api.routes.__file__).parent


def _store_calls(source: str) -> list[str]:
    """Every ``<something named store>.<method>(...)`` call in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and "store" in node.func.value.id.lower()
        ):
            found.append(f"{node.func.value.id}.{node.func.attr} (line {node.lineno})")
    return found


def test_the_check_sees_a_store_call():
    assert _store_calls("async def f(store):\n    await store.list_jobs(None)\n") == [
        "store.list_jobs (line 2)"
    ]


def test_no_route_calls_the_store():
    modules = sorted(ROUTES.glob("*.py"))
    assert modules, "no route modules found"
    calls = {path.name: _store_calls(path.read_text()) for path in modules}
    assert {name: found for name, found in calls.items() if found} == {}
