-- Workflow definitions by (namespace, name): saved (checked first, by rota.flows),
-- read and listed. The version counts changes: saving the same definition again
-- leaves it (and updated_at) as it was.

-- name: save_workflow
INSERT INTO rota_workflows (namespace, name, definition, version, created_at, updated_at)
VALUES (%(namespace)s, %(name)s, %(definition)s::jsonb, 1,
        COALESCE(%(now)s::timestamptz, now()), COALESCE(%(now)s::timestamptz, now()))
ON CONFLICT (namespace, name) DO UPDATE
SET definition = EXCLUDED.definition,
    version = CASE WHEN rota_workflows.definition = EXCLUDED.definition
                   THEN rota_workflows.version ELSE rota_workflows.version + 1 END,
    updated_at = CASE WHEN rota_workflows.definition = EXCLUDED.definition
                      THEN rota_workflows.updated_at ELSE EXCLUDED.updated_at END
RETURNING namespace, name, definition, version, created_at, updated_at;

-- name: get_workflow
SELECT namespace, name, definition, version, created_at, updated_at FROM rota_workflows
WHERE namespace = %(namespace)s AND name = %(name)s;

-- name: list_workflows
SELECT namespace, name, definition, version, created_at, updated_at FROM rota_workflows
WHERE namespace = COALESCE(%(namespace)s::text, namespace)
ORDER BY namespace, name;
