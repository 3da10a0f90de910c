"""Templates and the small helpers they use: instants (UTC in the page, the viewer's
zone once the script runs, UTC on hover), durations, and states that carry their name
and a symbol, never colour alone."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup, escape

from rota.domain.states import RunState

HERE = Path(__file__).parent
STATE_SYMBOLS = {
    RunState.PENDING: "◷",
    RunState.RETRYING: "↻",
    RunState.CLAIMED: "▸",
    RunState.RUNNING: "▶",
    RunState.SUCCEEDED: "✓",
    RunState.FAILED: "✗",
    RunState.TIMED_OUT: "⌛",
    RunState.CANCELLED: "⊘",
    RunState.DEAD_LETTERED: "☠",
    RunState.WAITING: "…",
    RunState.SKIPPED: "⤼",
}


def instant(value: datetime | None) -> Markup:
    """A <time> the script rewrites into the viewer's zone; its title keeps UTC."""
    if value is None:
        return Markup('<span class="muted">—</span>')
    utc = value.astimezone(ZoneInfo("UTC"))
    text = utc.strftime("%Y-%m-%d %H:%M:%S UTC")
    template = Markup('<time datetime="{0}" title="{1}">{1}</time>')
    return template.format(utc.isoformat(), text)  # format escapes what it fills in


def zoned(value: datetime, zone: str) -> str:
    local = value.astimezone(ZoneInfo(zone))
    return local.strftime("%Y-%m-%d %H:%M:%S %Z (UTC%z)")


def utcoffset(value: datetime, zone: str) -> str:
    """The zone's offset from UTC at ``value`` (+01:00): it changes at a DST transition."""
    return value.astimezone(ZoneInfo(zone)).strftime("%z")


def seconds(value: float | None) -> str:
    if value is None:
        return "—"
    if value < 1:
        return f"{value * 1000:.0f} ms"
    if value < 120:
        return f"{value:.1f} s"
    if value < 7200:
        return f"{value / 60:.1f} min"
    return f"{value / 3600:.1f} h"


def state_badge(state: RunState | str) -> Markup:
    state = RunState(state)
    badge = Markup('<span class="state state-{0}"><span aria-hidden="true">{1}</span> {2}</span>')
    return badge.format(state.value, STATE_SYMBOLS[state], state.value.replace("_", " "))


def pretty_json(value: Any) -> str:
    try:
        return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        instant=instant,
        zoned=zoned,
        utcoffset=utcoffset,
        seconds=seconds,
        state=state_badge,
        pretty_json=pretty_json,
        escape=escape,
    )
    env.globals["states"] = list(RunState)
    env.globals["symbols"] = {state.value: symbol for state, symbol in STATE_SYMBOLS.items()}
    return env
