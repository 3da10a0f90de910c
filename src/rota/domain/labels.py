"""A run's and a job's owner and labels (issue 29): who it belongs to, and free-form
key/value strings to find it by. Pure checks; every front end and both stores take
and refuse the same values (ADR 0037).

Labels are held in one form, a tuple of (key, value) pairs sorted by key: hashable (a
bulk enqueue shares a run's shape between its runs) and equal whatever order they were
given in. A store keeps them as a JSON object; none is NULL, never ``{}``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping

from rota.domain.values import check_text
from rota.errors import InvalidArgument

Labels = tuple[tuple[str, str], ...]

OWNER_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:@/-]{0,63}")
OWNER_RULE = "1-64 characters: letters, digits and _ . : @ / - (starting with a letter or digit)"
LABEL_KEY_PATTERN = re.compile(r"[a-z0-9][a-z0-9_./-]{0,62}")
LABEL_KEY_RULE = (
    "1-63 characters: lowercase letters, digits and _ . / - (starting with a letter or digit)"
)
MAX_LABEL_VALUE = 200
MAX_LABELS = 20
LABELS_RULE = (
    f"at most {MAX_LABELS} labels, each a key ({LABEL_KEY_RULE}) and a value of "
    f"0-{MAX_LABEL_VALUE} characters"
)
LABEL_FILTER_RULE = "key=value (the key: " + LABEL_KEY_RULE + ")"


def check_owner(value: object) -> str | None:
    """The owner (a team, a person, a service), or None for none."""
    if value is None:
        return None
    if not isinstance(value, str) or not OWNER_PATTERN.fullmatch(value):
        raise InvalidArgument("owner", value, OWNER_RULE)
    return value


def check_label_key(key: object) -> str:
    # fullmatch: with match, a trailing newline would slip through.
    if not isinstance(key, str) or not LABEL_KEY_PATTERN.fullmatch(key):
        raise InvalidArgument("label key", key, LABEL_KEY_RULE)
    return key


def check_label_value(key: str, value: object) -> str:
    if not isinstance(value, str) or len(value) > MAX_LABEL_VALUE:
        raise InvalidArgument(
            f"label {key!r}", value, f"a string of 0-{MAX_LABEL_VALUE} characters"
        )
    return check_text(f"label {key!r}", value)


def check_labels(value: object) -> Labels:
    """Labels in their one form: from a mapping, or from (key, value) pairs (a stored
    job's JSON, a repeated ``--label``). None is no labels; a key given twice is
    refused, not silently overwritten."""
    if value is None:
        return ()
    if isinstance(value, Mapping):
        pairs: Iterable[object] = value.items()
    elif isinstance(value, list | tuple):
        pairs = value
    else:
        raise InvalidArgument("labels", value, "an object of " + LABELS_RULE)
    checked: dict[str, str] = {}
    for pair in pairs:
        if not isinstance(pair, list | tuple) or len(pair) != 2:
            raise InvalidArgument("labels", value, "an object of " + LABELS_RULE)
        key = check_label_key(pair[0])
        if key in checked:
            raise InvalidArgument("label key", key, "each key at most once")
        checked[key] = check_label_value(key, pair[1])
    if len(checked) > MAX_LABELS:
        raise InvalidArgument("labels", f"{len(checked)} labels", LABELS_RULE)
    return tuple(sorted(checked.items()))


def parse_label(text: object) -> tuple[str, str]:
    """One ``key=value`` (a filter or a CLI ``--label``): split at the first '='."""
    if not isinstance(text, str) or "=" not in text:
        raise InvalidArgument("label", text, LABEL_FILTER_RULE)
    key, value = text.split("=", 1)
    return check_label_key(key), check_label_value(key, value)


def parse_labels(texts: Iterable[str]) -> Labels:
    """Repeated ``key=value`` texts as labels (a key given twice is refused)."""
    return check_labels([parse_label(text) for text in texts])


def labels_json(labels: Labels) -> str | None:
    """What a store keeps: a JSON object, or None for no labels."""
    return json.dumps(dict(labels), separators=(",", ":")) if labels else None


def labels_from_stored(value: str | Mapping[str, object] | None) -> Labels:
    """A stored labels column: SQLite's JSON text, PostgreSQL's decoded jsonb, or NULL.
    Read as stored (the checks were made on the way in)."""
    if value is None:
        return ()
    stored: Mapping[str, object] = json.loads(value) if isinstance(value, str) else value
    return tuple(sorted((str(key), str(label)) for key, label in stored.items()))
