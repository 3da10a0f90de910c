-- Queues an operator acts on (ADR 0035): paused or not, since when, by whom.

-- name: queues
SELECT name, paused, paused_at, paused_by FROM rota_queues ORDER BY name;

-- name: paused_queues
-- Read at most once a second by every claiming process (store/core/recent.py).
SELECT name FROM rota_queues WHERE paused;

-- name: set_queue_paused
-- Pausing a paused queue keeps when and by whom it was first paused; resuming clears both.
INSERT INTO rota_queues (name, paused, paused_at, paused_by)
VALUES (
    %(name)s,
    %(paused)s,
    CASE WHEN %(paused)s THEN COALESCE(%(now)s::timestamptz, now()) END,
    CASE WHEN %(paused)s THEN %(paused_by)s::text END
)
ON CONFLICT (name) DO UPDATE SET
    paused_at = CASE WHEN NOT EXCLUDED.paused THEN NULL
                     WHEN rota_queues.paused THEN rota_queues.paused_at
                     ELSE EXCLUDED.paused_at END,
    paused_by = CASE WHEN NOT EXCLUDED.paused THEN NULL
                     WHEN rota_queues.paused THEN rota_queues.paused_by
                     ELSE EXCLUDED.paused_by END,
    paused = EXCLUDED.paused
RETURNING name, paused, paused_at, paused_by;
