"""Opaque keyset cursors. A cursor says "continue below this id"; clients must not
build or edit them, and a damaged one is a 400 naming the ``cursor`` parameter."""

from __future__ import annotations

import base64
import binascii
import re

from rota.api.problems import ProblemException
from rota.domain.values import MAX_ID

# Ids we issue are at most MAX_ID (16 digits); a longer or larger one is not ours, and
# must not reach a store (past int64 it is a database error, not a 400).
_BODY = re.compile(r"([a-z]+):([1-9][0-9]{0,15})")


def encode(kind: str, last_id: int) -> str:
    return base64.urlsafe_b64encode(f"{kind}:{last_id}".encode()).decode().rstrip("=")


def decode(kind: str, cursor: str | None) -> int | None:
    """The id to continue below, or None for the first page."""
    if cursor is None:
        return None
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        text = base64.urlsafe_b64decode(padded.encode("ascii")).decode("ascii")
    except (binascii.Error, UnicodeError, ValueError):
        text = ""
    match = _BODY.fullmatch(text)
    if match is None or match[1] != kind or int(match[2]) > MAX_ID:
        raise ProblemException(
            400,
            "the cursor is not one this API issued; use next_cursor from a previous page",
            kind="bad-cursor",
            field_problems=[("query.cursor", "not a cursor issued by this endpoint")],
        )
    return int(match[2])


def next_cursor(kind: str, ids: list[int], limit: int) -> str | None:
    """A cursor for the page after ``ids`` (newest first), if the page was full."""
    return encode(kind, ids[-1]) if len(ids) == limit and ids else None
