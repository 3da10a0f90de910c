"""The app ``rota server`` runs in bench.start_delay's server variant (``--app
bench.start_delay_app:app``): one handler, ``tick``, that notes when each run starts, a
JSON line per run in the file ROTA_BENCH_MARKS names."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import rota

app = rota.App()
_marks = Path(os.environ.get("ROTA_BENCH_MARKS", os.devnull)).open("a", buffering=1)  # noqa: SIM115


@app.handler("tick")
async def tick(ctx: rota.RunContext, payload: Any) -> None:
    _marks.write(json.dumps({"run_id": ctx.run_id, "started": time.time()}) + "\n")
