-- rota schema version 12 (PostgreSQL): the workflow.finished webhook event (issue 14
-- item 3, DESIGN.md "Webhooks"). An event that is not a run's carries its own data
-- document (for workflow.finished: id, name, state, duration_seconds); the run columns
-- then name the step whose end finished the workflow run. NULL for run events.
ALTER TABLE rota_webhook_deliveries ADD COLUMN event_data jsonb;
