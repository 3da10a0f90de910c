"""An App's workflows: save a definition (and its schedule), start, read and cancel runs
of it (rota.services.workflows, rota.services.workflow_schedules)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from rota.app.base import AppBase
from rota.context import RunContext
from rota.domain.workflow_runs import WorkflowRunView
from rota.domain.workflows import StoredWorkflow, WorkflowDefinition
from rota.services import workflow_schedules
from rota.services import workflows as workflow_service
from rota.workflow import Workflow


class AppWorkflows(AppBase):
    """Saved workflows and their runs."""

    def workflow(
        self,
        flow: Workflow | WorkflowDefinition,
        *,
        namespace: str = "default",
        cron: str | None = None,
        interval: float | timedelta | None = None,
        at: datetime | None = None,
        timezone: str = "UTC",
        misfire: str = "fire_now",
        overlap: str = "allow",
        payload: Any = None,
        **options: Any,
    ) -> StoredWorkflow:
        """Check a workflow definition (cycles, handlers, names, step options) and save
        it in the database as (namespace, name), so any process can start it by name.
        Saving it again replaces it (its version counts changes). Register its
        handlers first.

        ``cron=`` (in ``timezone``), ``interval=`` or ``at=`` (once) also start it on
        a schedule, with ``payload`` as each run's workflow payload: the leader's
        planner starts exactly one workflow run per slot (``misfire`` as for jobs;
        options ``queue``, ``priority``, ``jitter``, ``catch_up_window``,
        ``run_all_cap``, ``max_attempts`` of the starting run). None of them: manual
        (a schedule saved before is removed). The schedule is the job
        ``workflow:<name>``: pause, resume and list it like any job."""
        schedule = workflow_schedules.WorkflowSchedule(
            cron, interval, at, timezone, misfire, overlap, payload, options
        )
        return self._stores.call(
            lambda: self.workflow_async(flow, namespace=namespace, schedule=schedule)
        )

    async def workflow_async(
        self,
        flow: Workflow | WorkflowDefinition,
        *,
        namespace: str = "default",
        schedule: workflow_schedules.WorkflowSchedule | None = None,
    ) -> StoredWorkflow:
        definition = flow.definition() if isinstance(flow, Workflow) else flow
        store = await self.store()
        stored, _ = await workflow_schedules.save(
            store, self.clock, self.registry, definition, namespace, schedule
        )
        return stored

    async def _start_scheduled_workflow(self, ctx: RunContext, payload: Any) -> dict[str, int]:
        store = await self.store()
        return await workflow_schedules.start_from_run(
            store, self.clock, self.registry, ctx, payload
        )

    def get_workflow(self, name: str, namespace: str = "default") -> StoredWorkflow:
        """A saved workflow definition (WorkflowNotFound if there is none)."""
        return self._stores.use(workflow_service.get, namespace, name)

    def list_workflows(self, namespace: str | None = None) -> list[StoredWorkflow]:
        """The saved workflow definitions (in one namespace, if given)."""
        return self._stores.use(workflow_service.definitions, namespace)

    def start_workflow(self, name: str, payload: Any = None, *, namespace: str = "default") -> int:
        """Start a run of a saved workflow; returns the workflow run's id."""
        return self._stores.call(
            lambda: self.start_workflow_async(name, payload, namespace=namespace)
        )

    async def start_workflow_async(
        self, name: str, payload: Any = None, *, namespace: str = "default"
    ) -> int:
        store = await self.store()
        return await workflow_service.start(
            store, self.clock, self.registry, name, payload, namespace
        )

    def cancel_workflow(self, workflow_run_id: int) -> WorkflowRunView:
        """Cancel every unfinished step of a workflow run (running ones are asked to stop)."""
        return self._stores.use(workflow_service.cancel, self.clock, workflow_run_id)

    def workflow_run(self, workflow_run_id: int) -> WorkflowRunView:
        """A workflow run: its derived state, duration, steps and graph."""
        return self._stores.use(workflow_service.show, workflow_run_id)
