"""The field types every body uses (names, priorities, durations, instants, the
Idempotency-Key header) and ``Request``, the base of every request body."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, get_args

from fastapi import Header
from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    model_validator,
)

from rota.domain.labels import LABELS_RULE, OWNER_RULE, check_labels, check_owner
from rota.domain.runs import NAME_PATTERN
from rota.domain.values import INSTANT_RULE, in_instant_range
from rota.domain.values import MAX_ID as MAX_ID

Name = Annotated[str, Field(pattern=NAME_PATTERN.pattern, examples=["nightly-report"])]
Priority = Annotated[int, Field(ge=1, le=10)]
Seconds = Annotated[float, Field(gt=0, le=10 * 365 * 24 * 3600)]


def _labels(value: dict[str, str]) -> dict[str, str]:
    return dict(check_labels(value))


# A run's or a job's owner and labels, checked by the domain's rules (domain/labels.py):
# a refusal is a 422 naming the value and the rule.
OwnerIn = Annotated[
    str,
    Field(description=f"Who it belongs to: {OWNER_RULE}.", examples=["billing"]),
    AfterValidator(check_owner),
]
LabelsIn = Annotated[
    dict[str, str],
    Field(description=f"Free-form: {LABELS_RULE}.", examples=[{"customer": "acme"}]),
    AfterValidator(_labels),
]


def _iso_instant(value: Any) -> Any:
    """Instants are ISO 8601 text only: pydantic would also take a number as a unix
    timestamp, which the schema (format: date-time) does not promise."""
    if not isinstance(value, str | datetime) or (
        isinstance(value, str) and not re.match(r"^\d{4}-\d{2}-\d{2}", value)
    ):
        raise ValueError("expected an ISO 8601 instant with a UTC offset")
    return value


def _in_range(value: datetime) -> datetime:
    """The library's instant range (see rota.domain.values), as a field error."""
    if not in_instant_range(value):
        raise ValueError(f"expected {INSTANT_RULE}")
    return value


Instant = Annotated[AwareDatetime, BeforeValidator(_iso_instant), AfterValidator(_in_range)]
# The header that makes a start safe to retry (a trigger, an enqueue, a workflow start).
IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        min_length=1,
        max_length=255,
        description="Retrying with the same key returns what the first request made.",
    ),
]


class Request(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _no_booleans_as_numbers(cls, data: Any) -> Any:
        """JSON's true is not the number 1: lax validation would take ``[true]`` as the
        run ids [1]. Refused for every number field (and list of numbers) of a body."""
        if isinstance(data, dict):
            for name, value in data.items():
                field = cls.model_fields.get(name)
                if field is not None and _numeric(field.annotation) and _holds_bool(value):
                    raise ValueError(f"{name} takes numbers, not true or false")
        return data


def _numeric(annotation: Any) -> bool:
    """Whether a field's type holds ints or floats and never a bool."""
    found: set[Any] = set()
    pending = [annotation]
    while pending:
        kind = pending.pop()
        found.add(kind)
        pending.extend(get_args(kind))
    return bool(found & {int, float}) and bool not in found


def _holds_bool(value: Any) -> bool:
    return isinstance(value, bool) or (
        isinstance(value, list) and any(isinstance(item, bool) for item in value)
    )
