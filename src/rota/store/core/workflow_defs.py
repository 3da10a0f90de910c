"""The one SQL store: workflow definitions saved by (namespace, name), so a process
that never registered a workflow (the API server, a leader's planner) can start it."""

from __future__ import annotations

import json
from datetime import datetime

from rota.domain.workflows import StoredWorkflow, WorkflowDefinition, definition_from_json
from rota.store.core.base import CoreBase
from rota.store.dialect import Row


def stored_workflow_from_row(row: Row) -> StoredWorkflow:
    return StoredWorkflow(
        namespace=row["namespace"],
        definition=definition_from_json(row["definition"]),
        version=row["version"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


class CoreWorkflowDefinitions(CoreBase):
    async def save_workflow(
        self, namespace: str, definition: WorkflowDefinition, now: datetime | None
    ) -> StoredWorkflow:
        params = {
            "namespace": namespace,
            "name": definition.name,
            "definition": json.dumps(definition.to_json()),
        }
        [row] = await self._d.write("save_workflow", params, now)
        return stored_workflow_from_row(row)

    async def get_workflow(self, namespace: str, name: str) -> StoredWorkflow | None:
        rows = await self._d.rows("get_workflow", {"namespace": namespace, "name": name})
        return stored_workflow_from_row(rows[0]) if rows else None

    async def list_workflows(self, namespace: str | None) -> list[StoredWorkflow]:
        return [
            stored_workflow_from_row(row)
            for row in await self._d.rows("list_workflows", {"namespace": namespace})
        ]
