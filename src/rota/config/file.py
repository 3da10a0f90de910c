"""``rota.yaml`` (or ``rota.toml``): the settings of rota.config.schema, grouped, read
and checked in one go. Whatever is wrong is one line naming the key as written in the
file (``worker.concurrency``), the value and what is allowed; never a traceback."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import yaml

from rota.config.schema import BY_KEY, ENTRIES
from rota.errors import InvalidArgument, RotaError
from rota.redact import HIDDEN

GROUPS: dict[str, list[str]] = {}
for _entry in ENTRIES:
    GROUPS.setdefault(_entry.group, []).append(_entry.key.partition(".")[2])


class ConfigFileError(RotaError):
    """The configuration file cannot be read, or does not hold a mapping of groups."""


def load(path: str | Path) -> dict[str, Any]:
    """The file's settings by key (``worker.concurrency``), each checked by its kind."""
    path = Path(path)
    document = _parse(path)
    values: dict[str, Any] = {}
    for group, settings in document.items():
        if group not in GROUPS:
            raise InvalidArgument(
                f"key in {path.name}", str(group), f"one of the groups {', '.join(GROUPS)}"
            )
        if not isinstance(settings, dict):
            raise InvalidArgument(f"{group} in {path.name}", settings, "a mapping of settings")
        for name, value in settings.items():
            key = f"{group}.{name}"
            entry = BY_KEY.get(key)
            if entry is None:
                allowed = ", ".join(f"{group}.{known}" for known in GROUPS[group])
                raise InvalidArgument(f"key in {path.name}", key, f"one of {allowed}")
            if not entry.kind.holds(value):
                shown = HIDDEN if entry.secret else value
                raise InvalidArgument(f"{key} in {path.name}", shown, entry.kind.allowed)
            values[key] = _normal(value, entry.kind.python_type)
    return values


def _normal(value: Any, python_type: type) -> Any:
    if python_type is float:
        return float(value)  # 30 in the file means 30.0 seconds
    if python_type is list:
        return list(value)
    return value


def _where_and_what(exc: Exception) -> str:
    """The parser's complaint and its place, never the text around it: PyYAML quotes
    the offending line, and that line may hold a secret."""
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "cannot be parsed"
        return (
            problem
            if mark is None
            else f"{problem} (line {mark.line + 1}, column {mark.column + 1})"
        )
    if isinstance(exc, yaml.YAMLError):
        return "cannot be parsed"
    return str(exc).splitlines()[0]  # tomllib says what and where, not the text


def _parse(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise ConfigFileError(
            f"configuration file {str(path)!r} cannot be read: {reason}"
        ) from None
    try:
        document = tomllib.loads(text) if path.suffix == ".toml" else yaml.safe_load(text)
    except (yaml.YAMLError, tomllib.TOMLDecodeError) as exc:
        reason = _where_and_what(exc)
        raise ConfigFileError(f"{path.name} is not valid {_language(path)}: {reason}") from None
    if document is None:
        return {}  # an empty file: every setting from elsewhere
    if not isinstance(document, dict):
        raise ConfigFileError(
            f"{path.name} must hold a mapping of groups (database:, server:, ...)"
        )
    return document


def _language(path: Path) -> str:
    return "TOML" if path.suffix == ".toml" else "YAML"
