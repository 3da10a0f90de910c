-- rota schema (SQLite): the W3C trace context active when a run was enqueued, so the
-- worker that runs it continues the same trace (rota[otel]). NULL when tracing is off.

ALTER TABLE rota_runs ADD COLUMN trace_context TEXT;
