"""An app whose payload validator has a bug: it raises a plain exception (not a
validation error) for some inputs, so the API meets an unhandled exception while
handling the request, as it would with any bug in user or rota code. The secret-in-logs
test uses it to force real 500s in a real server.
"""

from __future__ import annotations

from typing import Any

import pydantic

import rota

app = rota.App()
TRIGGER_WORD = "explode"


class Note(pydantic.BaseModel):
    text: str

    @pydantic.field_validator("text")
    @classmethod
    def buggy(cls, value: str) -> str:
        if TRIGGER_WORD in value:
            # A bug, deliberately not ValueError (pydantic would turn that into a 422).
            raise RuntimeError("the note index is corrupt")
        return value


@app.handler("note")
async def note(ctx: rota.RunContext, payload: Note) -> None:
    return None


@app.handler("anything")
async def anything(ctx: rota.RunContext, payload: Any) -> None:
    return None
