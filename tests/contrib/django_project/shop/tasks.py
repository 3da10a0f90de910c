"""Found by rota.contrib.django when Django starts (an installed app's tasks.py)."""

from __future__ import annotations

from typing import Any

import rota
from rota.contrib.django import handler


@handler("ship", max_attempts=2)
def ship(ctx: rota.RunContext, payload: dict[str, Any]) -> str:
    return f"shipped order {payload['order']}"
