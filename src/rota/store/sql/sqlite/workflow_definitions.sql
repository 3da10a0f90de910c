-- Workflow definitions by (namespace, name): saved (checked first, by rota.flows),
-- read and listed. The version counts changes: saving the same definition again
-- leaves it (and updated_at) as it was.

-- name: save_workflow
INSERT INTO rota_workflows (namespace, name, definition, version, created_at, updated_at)
VALUES (:namespace, :name, :definition, 1, :now, :now)
ON CONFLICT (namespace, name) DO UPDATE
SET definition = excluded.definition,
    version = CASE WHEN rota_workflows.definition = excluded.definition
                   THEN rota_workflows.version ELSE rota_workflows.version + 1 END,
    updated_at = CASE WHEN rota_workflows.definition = excluded.definition
                      THEN rota_workflows.updated_at ELSE excluded.updated_at END
RETURNING namespace, name, definition, version, created_at, updated_at;

-- name: get_workflow
SELECT namespace, name, definition, version, created_at, updated_at FROM rota_workflows
WHERE namespace = :namespace AND name = :name;

-- name: list_workflows
SELECT namespace, name, definition, version, created_at, updated_at FROM rota_workflows
WHERE namespace = COALESCE(:namespace, namespace)
ORDER BY namespace, name;
