"""rota: a distributed job scheduler for Python.

app = rota.App("sqlite:///rota.db")

@app.handler("send-report", max_attempts=3, timeout=30)
async def send_report(ctx: rota.RunContext, payload: dict) -> dict | None: ...

app.enqueue("send-report", {"day": "2026-11-29"})
app.run_worker()
"""

from rota import domain
from rota._version import __version__
from rota.app import App
from rota.clock import Clock, FakeClock, SystemClock
from rota.config import Settings
from rota.context import RunContext
from rota.domain import retry
from rota.domain.breakers import Breaker
from rota.domain.jobs import Job, JobSpec
from rota.domain.states import AttemptOutcome, RunState
from rota.errors import (
    HandlerTransactionsExhausted,
    InvalidArgument,
    PermanentFailure,
    RotaError,
    RunNotFound,
    SchemaMismatch,
    StoreError,
    StoreUnavailable,
    UnknownHandler,
)
from rota.services.runs import RunRequest
from rota.workflow import Workflow

__all__ = [
    "App",
    "AttemptOutcome",
    "Breaker",
    "Clock",
    "FakeClock",
    "HandlerTransactionsExhausted",
    "InvalidArgument",
    "Job",
    "JobSpec",
    "PermanentFailure",
    "RotaError",
    "RunContext",
    "RunNotFound",
    "RunRequest",
    "RunState",
    "SchemaMismatch",
    "Settings",
    "StoreError",
    "StoreUnavailable",
    "SystemClock",
    "UnknownHandler",
    "Workflow",
    "__version__",
    "domain",
    "retry",
]
