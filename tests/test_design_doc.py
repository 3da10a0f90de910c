"""DESIGN.md's state diagram and the code's transition table must say the same thing."""

from __future__ import annotations

import re
from pathlib import Path

from rota.domain.states import TRANSITIONS, RunState

DESIGN = Path(__file__).resolve().parent.parent / "DESIGN.md"
NAMES = {state.name.replace("_", "").lower(): state for state in RunState}


def _diagram_edges() -> set[tuple[RunState, RunState]]:
    text = DESIGN.read_text()
    diagram = text.split("```mermaid", 1)[1].split("```", 1)[0]
    edges = set()
    for source, target in re.findall(r"^\s*(\w+) --> (\w+)", diagram, re.MULTILINE):
        if "[*]" in (source, target) or source == "[" or target == "[":
            continue
        edges.add((NAMES[source.lower()], NAMES[target.lower()]))
    return edges


def test_every_transition_is_drawn_and_every_drawing_is_a_transition():
    assert _diagram_edges() == set(TRANSITIONS)


def test_terminal_states_have_no_way_out():
    # ...except workflow steps a replay reopens (DESIGN.md "Run states").
    reopened = {(RunState.SKIPPED, RunState.WAITING), (RunState.FAILED, RunState.WAITING)}
    for source, target in TRANSITIONS:
        assert not source.is_terminal or (source, target) in reopened


def test_every_file_design_names_is_in_the_repository():
    text = DESIGN.read_text()
    links = re.findall(r"\]\(([^)#\s]+)\)", text)
    named = re.findall(r"`((?:src|tests|docs)/[^`\s]+)`", text)
    assert links, "the pattern still finds DESIGN.md's links"
    missing = [path for path in links + named if not (DESIGN.parent / path).exists()]
    assert missing == []


def test_the_package_map_names_every_package_and_root_module():
    source = DESIGN.parent / "src" / "rota"
    text = DESIGN.read_text()
    drawn = text.split("## The map: packages and what may import what", 1)[1].split("```")[1]
    named = set(re.findall(r"[\w.]+/?", drawn))  # packages as name/, modules as name.py
    packages = {f"{p.name}/" for p in source.iterdir() if (p / "__init__.py").exists()}
    modules = {p.name for p in source.glob("*.py")} - {"__main__.py", "_version.py"}
    missing = sorted((packages | modules) - named)
    assert missing == [], f"DESIGN.md's package map does not name {missing}"


def test_the_sql_concept_list_names_every_sql_file_of_both_dialects():
    sql = DESIGN.parent / "src" / "rota" / "store" / "sql"
    listed = DESIGN.read_text().split("(SQL concepts: ", 1)[1].split(")", 1)[0]
    concepts = {name.strip() for name in listed.replace("\n", " ").split(",")}
    for dialect in ("sqlite", "postgres"):
        assert {path.stem for path in (sql / dialect).glob("*.sql")} == concepts, dialect
