-- The HTTP API's rate limits and failed-authentication budgets, shared by every server
-- process (ADR 0036): one fixed window per key, in rota_api_rate_windows.

-- name: spend_api_window
-- One hit on a key, counted in one statement: a key with no row, or whose window has
-- ended, starts a new window at now with a count of 1; otherwise its count grows (the
-- refused hits too, so a flood never reopens its window early). The caller compares
-- the count with its limit; seconds_left is what Retry-After says.
INSERT INTO rota_api_rate_windows AS w (key, window_start, window_end, count)
VALUES (:key, :now, :now + :window_seconds, 1)
ON CONFLICT (key) DO UPDATE SET
    window_start = CASE WHEN w.window_end <= excluded.window_start
                        THEN excluded.window_start ELSE w.window_start END,
    window_end = CASE WHEN w.window_end <= excluded.window_start
                      THEN excluded.window_end ELSE w.window_end END,
    count = CASE WHEN w.window_end <= excluded.window_start THEN 1 ELSE w.count + 1 END
RETURNING count, window_end - :now AS seconds_left;

-- name: full_api_windows
-- The keys among these whose current window already holds at least `limit` hits, the
-- one that ends last first (a read: a blocked check spends nothing).
SELECT key, window_end - :now AS seconds_left
FROM rota_api_rate_windows
WHERE key IN (SELECT value FROM json_each(:keys))
  AND count >= :limit
  AND window_end > :now
ORDER BY window_end DESC;

-- name: prune_api_windows
-- Windows that have ended count nothing any more (a housekeeping duty).
DELETE FROM rota_api_rate_windows WHERE key IN (
    SELECT key FROM rota_api_rate_windows WHERE window_end <= :now
    ORDER BY window_end LIMIT :limit)
RETURNING key;
