"""Secrets from files: every secret ``ROTA_<NAME>`` may instead be given as
``ROTA_<NAME>_FILE=/run/secrets/name``, as the official PostgreSQL image does, because
Docker and Kubernetes hand secrets out as files, not variables.

Only the secret variables (rota.config.schema marks them) are read this way: a general
rule would misread ``ROTA_CA_FILE``, which names a file and is no secret."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from rota.config.schema import SECRET_VARIABLES
from rota.errors import RotaError

FILE_SUFFIX = "_FILE"


class SecretTwiceGiven(RotaError, ValueError):
    """A secret variable and its ``_FILE`` are both set."""


class SecretFileUnreadable(RotaError):
    """A ``ROTA_*_FILE`` names a file that cannot be read."""


def with_secret_files(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``environ`` (None: the process's) with each secret's ``_FILE`` read into its
    variable; the file's trailing newline is not part of the secret. Setting a variable
    and its ``_FILE`` both is an error naming both (which should win is anyone's guess)."""
    environ = os.environ if environ is None else environ
    resolved = dict(environ)
    for variable in SECRET_VARIABLES:
        path = environ.get(variable + FILE_SUFFIX)
        if path is None:
            continue
        if environ.get(variable) is not None:
            raise SecretTwiceGiven(
                f"{variable} and {variable}{FILE_SUFFIX} are both set: set one of them "
                "(the value, or the file that holds it)"
            )
        resolved[variable] = read_secret_file(variable + FILE_SUFFIX, path)
    return resolved


def read_secret_file(variable: str, path: str) -> str:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise SecretFileUnreadable(f"{variable}={path!r} cannot be read: {reason}") from None
    return text.removesuffix("\n").removesuffix("\r")
