"""Payload types: what each handler says its payload is, as JSON Schema, and checks.

A handler's payload type is the annotation of its second parameter (``payload: Report``
with a pydantic model, a TypedDict, ``dict[str, int]``, ...). No annotation or ``Any``
accepts any JSON; ``dict`` accepts any JSON object. Payloads are checked the way they
travel, as JSON text, so what passes here is what the handler will be given.
"""

from __future__ import annotations

import inspect
import typing
from functools import cache
from typing import Any

import pydantic

from rota.domain.runs import encode_json
from rota.errors import InvalidPayload
from rota.handlers import HandlerFn, HandlerSpec, Registry


def payload_type(fn: HandlerFn) -> Any:
    """The annotation of ``fn``'s payload (second) parameter, or Any."""
    try:
        parameters = list(inspect.signature(fn).parameters.values())
        hints = typing.get_type_hints(fn)
    except (TypeError, ValueError, NameError):
        return Any
    if len(parameters) < 2:
        return Any
    return hints.get(parameters[1].name, Any)


@cache
def _adapter(fn: HandlerFn) -> pydantic.TypeAdapter[Any] | None:
    hint = payload_type(fn)
    if hint is Any:
        return None
    try:
        return pydantic.TypeAdapter(hint)
    except pydantic.PydanticUserError:
        return None  # a type pydantic cannot describe: accept any JSON


def payload_schema(spec: HandlerSpec) -> dict[str, Any]:
    """The JSON Schema of the handler's payload; ``{}`` (anything) when undeclared."""
    adapter = _adapter(spec.fn)
    if adapter is None:
        return {}
    try:
        return adapter.json_schema()
    except pydantic.PydanticUserError:
        return {}


def check_payload(registry: Registry, handler: str, payload: Any) -> None:
    """Raise InvalidPayload naming each field that does not fit the handler's type."""
    spec = registry.require(handler)
    adapter = _adapter(spec.fn)
    if adapter is None:
        return
    try:
        adapter.validate_json(encode_json("payload", payload))
    except pydantic.ValidationError as exc:
        errors = [
            (".".join(["payload", *(str(part) for part in error["loc"])]), error["msg"])
            for error in exc.errors(include_url=False)
        ]
        raise InvalidPayload(spec.name, errors) from None
