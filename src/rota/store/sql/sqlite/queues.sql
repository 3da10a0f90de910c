-- Queues an operator acts on (ADR 0035): paused or not, since when, by whom.

-- name: queues
SELECT name, paused, paused_at, paused_by FROM rota_queues ORDER BY name;

-- name: paused_queues
-- Read at most once a second by every claiming process (store/core/recent.py).
SELECT name FROM rota_queues WHERE paused = 1;

-- name: set_queue_paused
-- Pausing a paused queue keeps when and by whom it was first paused; resuming clears both.
INSERT INTO rota_queues (name, paused, paused_at, paused_by)
VALUES (:name, :paused, CASE WHEN :paused THEN :now END, CASE WHEN :paused THEN :paused_by END)
ON CONFLICT (name) DO UPDATE SET
    paused_at = CASE WHEN NOT excluded.paused THEN NULL
                     WHEN rota_queues.paused THEN rota_queues.paused_at
                     ELSE excluded.paused_at END,
    paused_by = CASE WHEN NOT excluded.paused THEN NULL
                     WHEN rota_queues.paused THEN rota_queues.paused_by
                     ELSE excluded.paused_by END,
    paused = excluded.paused
RETURNING name, paused, paused_at, paused_by;
