"""One scenario in a process of its own (the runner's child): run it, kill what it
started, check the invariants it asked for, and write the result as JSON.

    python -m chaos.one NAME SIZE DATABASE_URL WORKDIR RESULT_JSON
"""

from __future__ import annotations

import importlib
import json
import sys
import time
import traceback
from pathlib import Path

from chaos.harness import Context, ScenarioFailed


def main(argv: list[str]) -> int:
    name, size, db_url, workdir, result_path = argv
    module = importlib.import_module(f"chaos.scenarios.{name.replace('-', '_')}")
    ctx = Context(name=name, size=size, db_url=db_url, workdir=Path(workdir))
    started = time.monotonic()
    try:
        module.prepare(ctx)
        module.run(ctx)
    except ScenarioFailed as exc:
        ctx.failures.append(str(exc))
        ctx.diagnose()
    except Exception:
        ctx.failures.append("scenario error:\n" + traceback.format_exc(limit=6))
        ctx.diagnose()
    finally:
        ctx.kill_all()
        ctx.close()
    result = {
        "name": name,
        "size": size,
        "seconds": round(time.monotonic() - started, 1),
        "passed": not ctx.failures,
        "figures": ctx.figures,
        "failures": ctx.failures,
        "notes": ctx.notes,
    }
    Path(result_path).write_text(json.dumps(result, indent=2, default=str))
    return 0 if result["passed"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
