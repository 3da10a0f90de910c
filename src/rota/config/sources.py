"""Where each setting's value comes from: a flag, else the environment, else the
configuration file (``--config PATH`` / ``ROTA_CONFIG``), else its default. The same
order for ``rota server``, ``rota worker`` and every other command; ``rota config show``
prints it. Kinds and keys are rota.config.schema's; nothing here parses on its own."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rota.config import file as config_file
from rota.config.kinds import parse_setting
from rota.config.schema import BY_KEY, ENTRIES, SECRET_VARIABLES, Entry, Target
from rota.config.secret_files import FILE_SUFFIX, with_secret_files

CONFIG_VARIABLE = "ROTA_CONFIG"


@dataclass(frozen=True)
class Sources:
    """The configuration file's values and the environment's, both checked, by key."""

    file_path: str | None = None
    file_values: Mapping[str, Any] = field(default_factory=dict)
    env_values: Mapping[str, Any] = field(default_factory=dict)
    from_files: frozenset[str] = frozenset()  # variables read from their ROTA_*_FILE

    @classmethod
    def read(cls, environ: Mapping[str, str] | None = None) -> Sources:
        """From ``environ`` (None: the process's): its ROTA_* variables (secrets also
        from ``ROTA_*_FILE``) and the file ``ROTA_CONFIG`` names, if any."""
        given = os.environ if environ is None else environ
        from_files = frozenset(v for v in SECRET_VARIABLES if given.get(v + FILE_SUFFIX))
        environ = with_secret_files(given)
        path = environ.get(CONFIG_VARIABLE) or None
        file_values = config_file.load(path) if path else {}
        env_values = {
            entry.key: _parsed(entry, environ[entry.variable])
            for entry in ENTRIES
            if environ.get(entry.variable, "") != ""
        }
        return cls(path, file_values, env_values, from_files)

    def value(self, key: str, flag: Any = None) -> Any:
        """The flag if given, else the environment's, else the file's, else None."""
        if flag is not None:
            return flag
        if key in self.env_values:
            return self.env_values[key]
        return self.file_values.get(key)

    def origin(self, key: str, flag: Any = None) -> str:
        if flag is not None:
            return "flag"
        if key in self.env_values:
            variable = BY_KEY[key].variable
            return f"env {variable}{FILE_SUFFIX if variable in self.from_files else ''}"
        if key in self.file_values:
            return f"file {self.file_path}"
        return "default"

    def fields(self, target: Target) -> dict[str, Any]:
        """``target``'s fields set in the environment or the file (the environment's
        value where both are)."""
        merged = {**self.file_values, **self.env_values}
        return {BY_KEY[key].field: v for key, v in merged.items() if BY_KEY[key].target == target}

    def file_fields(self, target: Target) -> dict[str, Any]:
        """The file's values for ``target``'s fields (the environment is read by each
        target's own from_env, over these)."""
        return {
            BY_KEY[key].field: value
            for key, value in self.file_values.items()
            if BY_KEY[key].target == target
        }


def _parsed(entry: Entry, text: str) -> Any:
    if entry.kind.python_type is str and not entry.kind.choices:
        return text  # a text is taken as written (a secret is never parsed nor echoed)
    return parse_setting(entry.variable, entry.kind, text)
