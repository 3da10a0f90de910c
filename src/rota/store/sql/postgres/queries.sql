-- Named queries for PostgreSQL. `now` is NULL in production, so the database clock
-- decides; tests pass a fixed instant. Parameters use psycopg's %(name)s style.

-- name: db_now
SELECT COALESCE(%(now)s::timestamptz, now()) AS now;

-- name: insert_runs
-- Rows come as parallel arrays; ON CONFLICT keeps an idempotency key to one run.
INSERT INTO rota_runs (namespace, handler, queue, payload, priority, run_at, sort_at,
                       max_attempts, timeout_seconds, idempotency_key, replay_of, job_id,
                       slot_at, tags, concurrency_key, concurrency_limit, deadline,
                       correlation_id, created_at)
SELECT r.namespace, r.handler, r.queue, r.payload::jsonb, r.priority,
       COALESCE(r.run_at, t.now),
       COALESCE(r.run_at, t.now) - make_interval(secs => r.priority * %(aging_seconds)s),
       r.max_attempts, r.timeout_seconds, r.idempotency_key, r.replay_of, r.job_id, r.slot_at,
       NULLIF(r.tags::text[], '{}'), r.concurrency_key, r.concurrency_limit, r.deadline,
       r.correlation_id, t.now
FROM unnest(%(namespaces)s::text[], %(handlers)s::text[], %(queues)s::text[],
            %(payloads)s::text[], %(priorities)s::smallint[], %(run_ats)s::timestamptz[],
            %(max_attempts)s::integer[], %(timeouts)s::double precision[],
            %(idempotency_keys)s::text[], %(replay_ofs)s::bigint[], %(job_ids)s::bigint[],
            %(slot_ats)s::timestamptz[], %(tag_lists)s::text[], %(concurrency_keys)s::text[],
            %(concurrency_limits)s::integer[], %(deadlines)s::timestamptz[],
            %(correlation_ids)s::text[])
     AS r(namespace, handler, queue, payload, priority, run_at, max_attempts,
          timeout_seconds, idempotency_key, replay_of, job_id, slot_at, tags, concurrency_key,
          concurrency_limit, deadline, correlation_id),
     (SELECT COALESCE(%(now)s::timestamptz, now()) AS now) t
ON CONFLICT (namespace, handler, idempotency_key) WHERE idempotency_key IS NOT NULL
DO NOTHING
RETURNING id, namespace, handler, idempotency_key;

-- name: existing_by_idempotency_key
SELECT id, namespace, handler, idempotency_key FROM rota_runs
WHERE idempotency_key = ANY(%(keys)s::text[]);

-- name: reserve_ids
SELECT nextval('rota_run_id_seq'), COALESCE(%(now)s::timestamptz, now())
FROM generate_series(1, %(count)s);

-- name: copy_runs
COPY rota_runs (id, namespace, handler, queue, payload, priority, run_at, sort_at,
                max_attempts, timeout_seconds, replay_of, job_id, slot_at, tags,
                concurrency_key, concurrency_limit, deadline, correlation_id, created_at)
FROM STDIN;

-- name: claim
-- The plain path, for runs no limit applies to: one index range scan per queue
-- (LATERAL), merged by effective priority. SKIP LOCKED lets concurrent claimers pass
-- each other's rows instead of queueing on them.
WITH t AS (SELECT COALESCE(%(now)s::timestamptz, now()) AS now),
picked AS (
    SELECT c.id FROM unnest(%(queues)s::text[]) AS q(name), t,
    LATERAL (
        SELECT id, sort_at FROM rota_runs
        WHERE state IN ('pending', 'retrying') AND concurrency_key IS NULL
          AND queue = q.name AND run_at <= t.now
          AND handler <> ALL(%(limited_handlers)s::text[])
          AND (tags IS NULL OR tags <@ %(tags)s::text[])
          AND (deadline IS NULL OR deadline >= t.now OR attempt > 0)
        ORDER BY sort_at, id
        LIMIT %(limit)s
        FOR UPDATE SKIP LOCKED
    ) AS c
    ORDER BY c.sort_at, c.id
    LIMIT %(limit)s
)
UPDATE rota_runs r
SET state = 'claimed',
    attempt = r.attempt + 1,
    fence = r.fence + 1,
    worker_id = %(worker_id)s,
    started_at = t.now,
    lease_expires_at = t.now + make_interval(secs => %(lease_seconds)s)
FROM picked, t
WHERE r.id = picked.id
RETURNING r.id, r.handler, r.payload, r.queue, r.attempt, r.max_attempts, r.fence,
          r.timeout_seconds, r.lost_count, r.idempotency_key, r.lease_expires_at,
          r.correlation_id;

-- name: next_due_in
-- Only runs not due yet: one that is due but not ours to take (tags, limits) must not
-- keep an idle worker spinning.
SELECT EXTRACT(EPOCH FROM min(run_at) - COALESCE(%(now)s::timestamptz, now()))
FROM rota_runs
WHERE state IN ('pending', 'retrying') AND queue = ANY(%(queues)s::text[])
  AND run_at > COALESCE(%(now)s::timestamptz, now());

-- name: claim_lock
-- Serialises limit-checking claims cluster-wide for this transaction, so two claimers
-- never both take the last slot of a limit. Plain claims do not take it. A holder that
-- stalls (a paused process) must not stall every limited claim: the server ends its
-- session after 5 s idle in this transaction, and waiters give up after 2 s.
SET LOCAL idle_in_transaction_session_timeout = '5s';
SET LOCAL lock_timeout = '2s';
SELECT pg_advisory_xact_lock(7307916210);

-- name: limits
SELECT scope, name, max_running FROM rota_limits;

-- name: has_keyed_work
SELECT EXISTS (
    SELECT 1 FROM rota_runs
    WHERE state IN ('pending', 'retrying') AND concurrency_key IS NOT NULL
      AND queue = ANY(%(queues)s::text[])
      AND run_at <= COALESCE(%(now)s::timestamptz, now()));

-- name: active_groups
SELECT queue, handler, concurrency_key, min(concurrency_limit), count(*)
FROM rota_runs
WHERE state IN ('claimed', 'running')
GROUP BY queue, handler, concurrency_key;

-- name: limited_candidates
-- Runs some limit applies to, per queue in priority order, skipping groups already full.
-- No row locks: claimers of these runs are serialised by claim_lock.
WITH t AS (SELECT COALESCE(%(now)s::timestamptz, now()) AS now)
SELECT c.id, c.queue, c.handler, c.concurrency_key, c.concurrency_limit
FROM unnest(%(queues)s::text[]) AS q(name), t,
LATERAL (
    SELECT id, queue, handler, concurrency_key, concurrency_limit, sort_at FROM rota_runs
    WHERE state IN ('pending', 'retrying') AND queue = q.name AND run_at <= t.now
      AND (concurrency_key IS NOT NULL OR handler = ANY(%(limited_handlers)s::text[])
           OR q.name = ANY(%(limited_queues)s::text[]) OR %(global_limit)s)
      AND (concurrency_key IS NULL OR concurrency_key <> ALL(%(full_keys)s::text[]))
      AND handler <> ALL(%(full_handlers)s::text[])
      AND id <> ALL(%(chosen)s::bigint[])
      AND (tags IS NULL OR tags <@ %(tags)s::text[])
      AND (deadline IS NULL OR deadline >= t.now OR attempt > 0)
    ORDER BY sort_at, id
    LIMIT %(window)s
) AS c
ORDER BY c.sort_at, c.id
LIMIT %(window)s;

-- name: claim_ids
WITH t AS (SELECT COALESCE(%(now)s::timestamptz, now()) AS now)
UPDATE rota_runs r
SET state = 'claimed',
    attempt = r.attempt + 1,
    fence = r.fence + 1,
    worker_id = %(worker_id)s,
    started_at = t.now,
    lease_expires_at = t.now + make_interval(secs => %(lease_seconds)s)
FROM t
WHERE r.id = ANY(%(ids)s::bigint[]) AND r.state IN ('pending', 'retrying')
RETURNING r.id, r.handler, r.payload, r.queue, r.attempt, r.max_attempts, r.fence,
          r.timeout_seconds, r.lost_count, r.idempotency_key, r.lease_expires_at,
          r.correlation_id;

-- name: renew
-- The first renewal also confirms the run is executing (Claimed -> Running).
WITH t AS (SELECT COALESCE(%(now)s::timestamptz, now()) AS now)
UPDATE rota_runs r
SET lease_expires_at = t.now + make_interval(secs => %(lease_seconds)s),
    state = 'running'
FROM unnest(%(ids)s::bigint[], %(fences)s::bigint[]) AS l(id, fence), t
WHERE r.id = l.id AND r.fence = l.fence AND r.state IN ('claimed', 'running')
RETURNING r.id, r.cancel_requested, r.lease_expires_at;

-- name: complete
-- Fenced: a stale worker's outcome matches no row and is dropped. The attempt row is
-- written in the same statement, so run and history never disagree.
WITH t AS (SELECT COALESCE(%(now)s::timestamptz, now()) AS now),
input AS (
    SELECT * FROM unnest(%(ids)s::bigint[], %(fences)s::bigint[], %(states)s::text[],
                         %(outcomes)s::text[], %(results)s::text[], %(errors)s::text[],
                         %(retry_delays)s::double precision[])
           AS c(id, fence, state, outcome, result, error, retry_delay)
),
done AS (
    UPDATE rota_runs r
    -- A cancel request outranks a retry: the run is not tried again.
    SET state = CASE WHEN c.state = 'retrying' AND r.cancel_requested THEN 'cancelled'
                     ELSE c.state END,
        result = c.result::jsonb,
        error = c.error,
        lease_expires_at = NULL,
        lost_count = 0,
        -- The database failed the attempt, not the handler: the attempt is given back
        -- (as a release does), so an outage costs no attempts.
        attempt = CASE WHEN c.outcome = 'infrastructure' THEN r.attempt - 1 ELSE r.attempt END,
        -- The retry instant is the database's now + delay (never a worker's clock), and
        -- sort_at moves with run_at so a retry keeps its priority boost.
        sort_at = CASE WHEN c.retry_delay IS NULL THEN r.sort_at
                       ELSE t.now + make_interval(secs => c.retry_delay) - (r.run_at - r.sort_at) END,
        run_at = CASE WHEN c.retry_delay IS NULL THEN r.run_at
                      ELSE t.now + make_interval(secs => c.retry_delay) END,
        finished_at = CASE WHEN c.state = 'retrying' AND NOT r.cancel_requested THEN NULL
                           ELSE t.now END
    FROM input c, t
    WHERE r.id = c.id AND r.fence = c.fence AND r.state IN ('claimed', 'running')
    RETURNING r.id, r.fence,
              CASE WHEN c.outcome = 'infrastructure' THEN r.attempt + 1 ELSE r.attempt END
                  AS attempt,
              r.worker_id, r.started_at, c.outcome, c.error, r.concurrency_key
),
recorded AS (
    INSERT INTO rota_attempts (run_id, fence, attempt, worker_id, started_at, finished_at,
                               outcome, error)
    SELECT d.id, d.fence, d.attempt, d.worker_id, d.started_at, t.now, d.outcome, d.error
    FROM done d, t
    RETURNING run_id
)
SELECT run_id FROM recorded
-- A keyed run that ends frees a slot of its key: wake the workers waiting on it now
-- rather than at their next poll (one notification, delivered at commit).
UNION ALL
SELECT NULL FROM (SELECT pg_notify('rota_wakeup', '') FROM done
                  WHERE concurrency_key IS NOT NULL LIMIT 1) AS wake;

-- name: recorded_outcomes
-- After an ambiguous commit: which of these outcomes did land? The outcome must match,
-- since the reaper records a 'lost' attempt under the same fence.
SELECT a.run_id FROM rota_attempts a
JOIN unnest(%(ids)s::bigint[], %(fences)s::bigint[], %(outcomes)s::text[])
     AS l(id, fence, outcome)
  ON a.run_id = l.id AND a.fence = l.fence AND a.outcome = l.outcome;

-- name: release
-- A graceful hand-back: the run is claimable again at once and the attempt is not spent.
WITH t AS (SELECT COALESCE(%(now)s::timestamptz, now()) AS now),
released AS (
    UPDATE rota_runs r
    SET state = CASE WHEN r.cancel_requested THEN 'cancelled' ELSE 'pending' END,
        finished_at = CASE WHEN r.cancel_requested THEN t.now END,
        attempt = r.attempt - 1, lease_expires_at = NULL
    FROM unnest(%(ids)s::bigint[], %(fences)s::bigint[]) AS l(id, fence), t
    WHERE r.id = l.id AND r.fence = l.fence AND r.state IN ('claimed', 'running')
    RETURNING r.id, r.fence, r.attempt + 1 AS attempt, r.worker_id, r.started_at
),
recorded AS (
    INSERT INTO rota_attempts (run_id, fence, attempt, worker_id, started_at, finished_at,
                               outcome, error)
    SELECT id, fence, attempt, worker_id, started_at, t.now, 'released',
           'worker shut down before the run finished'
    FROM released, t
    RETURNING run_id
)
SELECT run_id, pg_notify('rota_wakeup', '') FROM recorded;

-- name: reap_expired
-- Leases are judged by the database clock only. A run that keeps losing its worker is
-- poison: after poison_after consecutive losses it is dead-lettered, not retried.
WITH t AS (SELECT COALESCE(%(now)s::timestamptz, now()) AS now),
expired AS (
    -- What becomes of each: a run someone asked to cancel stays cancelled; poison and
    -- spent runs are dead-lettered; the rest go back to pending.
    SELECT id, CASE WHEN cancel_requested THEN 'cancel'
                    WHEN lost_count + 1 >= %(poison_after)s THEN 'poison'
                    WHEN attempt >= max_attempts THEN 'spent'
                    ELSE 'retry' END AS verdict
    FROM rota_runs
    WHERE state IN ('claimed', 'running') AND lease_expires_at < (SELECT now FROM t)
      AND (%(term)s::bigint IS NULL
           OR EXISTS (SELECT 1 FROM rota_leases WHERE name = 'leader' AND term = %(term)s))
    ORDER BY lease_expires_at
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
),
reaped AS (
    UPDATE rota_runs r
    SET state = CASE e.verdict WHEN 'retry' THEN 'pending' WHEN 'cancel' THEN 'cancelled'
                               ELSE 'dead_lettered' END,
        lost_count = r.lost_count + 1,
        lease_expires_at = NULL,
        error = CASE e.verdict
            WHEN 'cancel' THEN 'cancelled by request (its worker was lost before it stopped)'
            WHEN 'poison' THEN 'poison: lost its worker ' || (r.lost_count + 1) || ' times in a row'
            WHEN 'spent'
                THEN 'lease expired on the last attempt (worker ' || COALESCE(r.worker_id, '?') || ')'
            ELSE r.error END,
        finished_at = CASE WHEN e.verdict = 'retry' THEN NULL ELSE t.now END
    FROM expired e, t
    WHERE r.id = e.id
    RETURNING r.id, r.fence, r.attempt, r.worker_id, r.started_at, r.state
),
recorded AS (
    INSERT INTO rota_attempts (run_id, fence, attempt, worker_id, started_at, finished_at,
                               outcome, error)
    SELECT id, fence, attempt, worker_id, started_at, t.now, 'lost',
           'lease expired: worker ' || COALESCE(worker_id, '?') || ' stopped renewing it'
    FROM reaped, t
    RETURNING run_id
)
SELECT r.id, r.fence, r.state, pg_notify('rota_wakeup', '') FROM reaped r;

-- name: prune_finished
WITH doomed AS (
    SELECT id FROM rota_runs
    WHERE finished_at IS NOT NULL AND finished_at < %(older_than)s
      AND (%(term)s::bigint IS NULL
           OR EXISTS (SELECT 1 FROM rota_leases WHERE name = 'leader' AND term = %(term)s))
    ORDER BY finished_at
    LIMIT %(limit)s
),
gone_attempts AS (DELETE FROM rota_attempts WHERE run_id IN (SELECT id FROM doomed)),
gone_logs AS (DELETE FROM rota_run_logs WHERE run_id IN (SELECT id FROM doomed))
DELETE FROM rota_runs WHERE id IN (SELECT id FROM doomed);

-- name: append_logs
INSERT INTO rota_run_logs (run_id, attempt, at, level, message, fields)
SELECT * FROM unnest(%(run_ids)s::bigint[], %(attempts)s::integer[], %(ats)s::timestamptz[],
                     %(levels)s::text[], %(messages)s::text[], %(fields)s::jsonb[]);

-- name: get_run
SELECT * FROM rota_runs WHERE id = %(id)s;

-- name: list_runs
SELECT * FROM rota_runs
WHERE (%(state)s::text IS NULL OR state = %(state)s)
  AND (%(handler)s::text IS NULL OR handler = %(handler)s)
  AND (%(queue)s::text IS NULL OR queue = %(queue)s)
  AND (%(before_id)s::bigint IS NULL OR id < %(before_id)s)
ORDER BY id DESC
LIMIT %(limit)s;

-- name: attempts
SELECT * FROM rota_attempts WHERE run_id = %(id)s ORDER BY fence;

-- name: logs
SELECT * FROM rota_run_logs WHERE run_id = %(id)s ORDER BY id;

-- name: cancel_waiting
UPDATE rota_runs
SET state = 'cancelled', finished_at = COALESCE(%(now)s::timestamptz, now()),
    error = 'cancelled by request'
WHERE id = %(id)s AND state IN ('pending', 'retrying')
RETURNING id;

-- name: request_cancel_active
UPDATE rota_runs SET cancel_requested = true
WHERE id = %(id)s AND state IN ('claimed', 'running')
RETURNING id;

-- name: save_job
INSERT INTO rota_jobs AS j (namespace, name, spec, cursor, next_fire_at, created_at, updated_at)
VALUES (%(namespace)s, %(name)s, %(spec)s::jsonb, %(cursor)s, %(next_fire_at)s,
        COALESCE(%(now)s::timestamptz, now()), COALESCE(%(now)s::timestamptz, now()))
ON CONFLICT (namespace, name) DO UPDATE
SET spec = EXCLUDED.spec, cursor = EXCLUDED.cursor, next_fire_at = EXCLUDED.next_fire_at,
    updated_at = EXCLUDED.updated_at,
    -- an update may well fix what failed: plan it again at once
    planning_error = NULL, planning_failed_at = NULL, planning_failures = 0,
    planning_retry_at = NULL
RETURNING *;

-- name: get_job
SELECT * FROM rota_jobs WHERE namespace = %(namespace)s AND name = %(name)s;

-- name: get_job_by_id
SELECT * FROM rota_jobs WHERE id = %(id)s;

-- name: list_jobs
SELECT * FROM rota_jobs
WHERE (%(namespace)s::text IS NULL OR namespace = %(namespace)s)
ORDER BY namespace, name;

-- name: delete_job
DELETE FROM rota_jobs WHERE namespace = %(namespace)s AND name = %(name)s RETURNING id;

-- name: set_job_paused
-- Resuming plans from now on: slots that fell in the pause are not caught up.
UPDATE rota_jobs
SET paused = %(paused)s,
    cursor = CASE WHEN paused AND NOT %(paused)s THEN %(cursor)s ELSE cursor END,
    next_fire_at = CASE WHEN paused AND NOT %(paused)s THEN %(next_fire_at)s ELSE next_fire_at END,
    planning_retry_at = CASE WHEN NOT %(paused)s THEN NULL ELSE planning_retry_at END,
    updated_at = COALESCE(%(now)s::timestamptz, now())
WHERE namespace = %(namespace)s AND name = %(name)s
RETURNING *;

-- name: due_jobs
-- A job set aside after a planning error waits for its retry instant.
SELECT * FROM rota_jobs
WHERE NOT paused AND next_fire_at <= %(until)s
  AND (planning_retry_at IS NULL OR planning_retry_at <= %(until)s)
ORDER BY next_fire_at
LIMIT %(limit)s;

-- name: job_run_counts
SELECT count(*) FILTER (WHERE state IN ('claimed', 'running')),
       count(*) FILTER (WHERE state IN ('pending', 'retrying'))
FROM rota_runs
WHERE job_id = %(job_id)s AND state IN ('pending', 'retrying', 'claimed', 'running');

-- name: advance_jobs
-- Compare-and-set on each cursor: of several planners that read the same cursor, one
-- moves it. A deposed leader's term no longer matches, and it moves nothing.
UPDATE rota_jobs j
SET cursor = a.cursor, next_fire_at = a.next_fire_at,
    updated_at = COALESCE(%(now)s::timestamptz, now()),
    planning_error = NULL, planning_failed_at = NULL, planning_failures = 0,
    planning_retry_at = NULL
FROM unnest(%(ids)s::bigint[], %(expected)s::timestamptz[], %(cursors)s::timestamptz[],
            %(next_fire_ats)s::timestamptz[]) AS a(id, expected, cursor, next_fire_at)
WHERE j.id = a.id AND j.cursor = a.expected AND NOT j.paused
  AND (%(term)s::bigint IS NULL
       OR EXISTS (SELECT 1 FROM rota_leases WHERE name = 'leader' AND term = %(term)s))
RETURNING j.id;

-- name: set_job_aside
-- Planning this job failed: say why, and when to try again. Its cursor stays.
UPDATE rota_jobs
SET planning_error = %(error)s, planning_failed_at = COALESCE(%(now)s::timestamptz, now()),
    planning_failures = planning_failures + 1, planning_retry_at = %(retry_at)s
WHERE id = %(id)s
RETURNING id;

-- name: acquire_leadership
-- Renew if we hold the term we think we hold (even just past expiry: nobody took over);
-- otherwise take over only an expired lease, with term + 1.
WITH t AS (SELECT COALESCE(%(now)s::timestamptz, now()) AS now)
INSERT INTO rota_leases AS l (name, holder, term, acquired_at, expires_at)
SELECT 'leader', %(holder)s, 1, t.now, t.now + make_interval(secs => %(lease_seconds)s) FROM t
ON CONFLICT (name) DO UPDATE
SET term = CASE WHEN l.holder = EXCLUDED.holder AND l.term = %(term)s THEN l.term
                ELSE l.term + 1 END,
    acquired_at = CASE WHEN l.holder = EXCLUDED.holder AND l.term = %(term)s THEN l.acquired_at
                       ELSE EXCLUDED.acquired_at END,
    holder = EXCLUDED.holder,
    expires_at = EXCLUDED.expires_at
WHERE (l.holder = EXCLUDED.holder AND l.term = %(term)s) OR l.expires_at < EXCLUDED.acquired_at
RETURNING term;

-- name: resign_leadership
UPDATE rota_leases
SET expires_at = COALESCE(%(now)s::timestamptz, now()) - interval '1 millisecond'
WHERE name = 'leader' AND holder = %(holder)s AND term = %(term)s;

-- name: leader
SELECT holder, term, acquired_at, expires_at FROM rota_leases WHERE name = 'leader';

-- name: leader_history
SELECT term, holder, acquired_at FROM rota_leader_terms ORDER BY term DESC LIMIT %(limit)s;

-- name: set_limit
INSERT INTO rota_limits (scope, name, max_running) VALUES (%(scope)s, %(name)s, %(max_running)s)
ON CONFLICT (scope, name) DO UPDATE SET max_running = EXCLUDED.max_running;

-- name: clear_limit
DELETE FROM rota_limits WHERE scope = %(scope)s AND name = %(name)s RETURNING name;

-- name: expire_deadlines
-- A run not started by its deadline never runs.
WITH t AS (SELECT COALESCE(%(now)s::timestamptz, now()) AS now)
UPDATE rota_runs r
SET state = 'cancelled', finished_at = t.now,
    error = 'deadline_exceeded: not started by ' || to_char(r.deadline AT TIME ZONE 'UTC',
                                                             'YYYY-MM-DD"T"HH24:MI:SS"Z"')
FROM t
WHERE r.state = 'pending' AND r.attempt = 0 AND r.deadline < t.now
  AND (%(term)s::bigint IS NULL
       OR EXISTS (SELECT 1 FROM rota_leases WHERE name = 'leader' AND term = %(term)s))
RETURNING r.id;

-- name: register_worker
WITH t AS (SELECT COALESCE(%(now)s::timestamptz, now()) AS now)
INSERT INTO rota_workers (node_id, host, pid, version, queues, tags, concurrency, state,
                          started_at, heartbeat_at)
SELECT %(node_id)s, %(host)s, %(pid)s, %(version)s, %(queues)s::text[], %(tags)s::text[],
       %(concurrency)s, 'active', t.now, t.now FROM t
ON CONFLICT (node_id) DO UPDATE
SET host = EXCLUDED.host, pid = EXCLUDED.pid, version = EXCLUDED.version,
    queues = EXCLUDED.queues, tags = EXCLUDED.tags, concurrency = EXCLUDED.concurrency,
    state = 'active', started_at = EXCLUDED.started_at, heartbeat_at = EXCLUDED.heartbeat_at;

-- name: worker_heartbeat
-- A worker declared dead that is in fact alive (a long pause) comes back as active:
-- its runs were already taken back, and its stale writes are fenced out.
UPDATE rota_workers
SET heartbeat_at = COALESCE(%(now)s::timestamptz, now()),
    state = CASE WHEN state = 'dead' THEN 'active' ELSE state END
WHERE node_id = %(node_id)s
RETURNING state;

-- name: set_worker_state
UPDATE rota_workers SET state = %(state)s
WHERE node_id = %(node_id)s AND state <> 'dead'
RETURNING node_id;

-- name: deregister_worker
DELETE FROM rota_workers WHERE node_id = %(node_id)s;

-- name: list_workers
SELECT node_id, host, pid, version, queues, tags, concurrency, state, started_at, heartbeat_at
FROM rota_workers ORDER BY node_id;

-- name: mark_dead_workers
-- Workers silent for longer than dead_after are dead; their leases are ended now so
-- the reaper takes their runs back at once instead of waiting out each lease.
WITH t AS (SELECT COALESCE(%(now)s::timestamptz, now()) AS now),
dead AS (
    UPDATE rota_workers w SET state = 'dead'
    FROM t
    WHERE w.state <> 'dead'
      AND w.heartbeat_at < t.now - make_interval(secs => %(dead_after)s)
      AND (%(term)s::bigint IS NULL
           OR EXISTS (SELECT 1 FROM rota_leases WHERE name = 'leader' AND term = %(term)s))
    RETURNING w.node_id
),
ended AS (
    UPDATE rota_runs r SET lease_expires_at = t.now - interval '1 millisecond'
    FROM t
    WHERE r.state IN ('claimed', 'running') AND r.worker_id IN (SELECT node_id FROM dead)
    RETURNING r.id
)
SELECT node_id, (SELECT count(*) FROM ended) FROM dead;

-- name: prune_workers
DELETE FROM rota_workers
WHERE state = 'dead' AND heartbeat_at < %(older_than)s;

-- name: unclaimable_runs
-- Due runs whose required tags no live worker serving their queue has.
SELECT r.id, r.queue, r.tags FROM rota_runs r
WHERE r.state IN ('pending', 'retrying') AND r.tags IS NOT NULL
  AND r.run_at <= COALESCE(%(now)s::timestamptz, now())
  AND NOT EXISTS (
      SELECT 1 FROM rota_workers w
      WHERE w.state = 'active' AND r.tags <@ w.tags AND r.queue = ANY(w.queues))
ORDER BY r.id
LIMIT %(limit)s;

-- == api ==

-- name: search_runs
-- Newest first by id (keyset: id < before_id). Each filter is skipped when NULL.
SELECT r.* FROM rota_runs r
WHERE (%(namespaces)s::text[] IS NULL OR r.namespace = ANY(%(namespaces)s::text[]))
  AND (%(states)s::text[] IS NULL OR r.state = ANY(%(states)s::text[]))
  AND (%(handler)s::text IS NULL OR r.handler = %(handler)s)
  AND (%(queue)s::text IS NULL OR r.queue = %(queue)s)
  AND (%(tag)s::text IS NULL OR r.tags @> ARRAY[%(tag)s::text])
  AND (%(job_id)s::bigint IS NULL OR r.job_id = %(job_id)s)
  AND (%(created_after)s::timestamptz IS NULL OR r.created_at >= %(created_after)s)
  AND (%(created_before)s::timestamptz IS NULL OR r.created_at < %(created_before)s)
  AND (%(pattern)s::text IS NULL
       OR r.handler ILIKE %(pattern)s ESCAPE '\'
       OR r.error ILIKE %(pattern)s ESCAPE '\'
       OR EXISTS (SELECT 1 FROM rota_jobs j
                  WHERE j.id = r.job_id AND j.name ILIKE %(pattern)s ESCAPE '\'))
  AND (%(before_id)s::bigint IS NULL OR r.id < %(before_id)s)
ORDER BY r.id DESC
LIMIT %(limit)s;

-- name: oldest_due_run_at
SELECT min(run_at) FROM rota_runs
WHERE state IN ('pending', 'retrying') AND run_at <= COALESCE(%(now)s::timestamptz, now());

-- name: insert_api_key
INSERT INTO rota_api_keys (key_id, secret_hash, name, scopes, namespaces, created_by,
                           created_at)
VALUES (%(key_id)s, %(secret_hash)s, %(name)s, %(scopes)s::text[], %(namespaces)s::text[],
        %(created_by)s, COALESCE(%(now)s::timestamptz, now()))
RETURNING *;

-- name: get_api_key
SELECT * FROM rota_api_keys WHERE key_id = %(key_id)s;

-- name: list_api_keys
SELECT * FROM rota_api_keys ORDER BY created_at, key_id;

-- name: revoke_api_key
-- Revoking twice keeps the first instant.
UPDATE rota_api_keys SET revoked_at = COALESCE(revoked_at, %(now)s::timestamptz, now())
WHERE key_id = %(key_id)s
RETURNING *;

-- name: append_audit
INSERT INTO rota_audit_log (at, actor, action, target, namespace, status, outcome,
                            correlation_id, detail)
VALUES (COALESCE(%(now)s::timestamptz, now()), %(actor)s, %(action)s, %(target)s,
        %(namespace)s, %(status)s, %(outcome)s, %(correlation_id)s, %(detail)s)
RETURNING id;

-- name: list_audit
SELECT * FROM rota_audit_log
WHERE (%(namespaces)s::text[] IS NULL OR namespace = ANY(%(namespaces)s::text[]))
  AND (%(before_id)s::bigint IS NULL OR id < %(before_id)s)
ORDER BY id DESC
LIMIT %(limit)s;

-- name: live_queue_counts
-- Unfinished runs and dead letters per namespace, queue and state (rota_runs_state_id).
SELECT namespace, queue, state, count(*) AS count,
       min(run_at) FILTER (WHERE state IN ('pending', 'retrying')
                            AND run_at <= COALESCE(%(now)s::timestamptz, now())) AS oldest_due_at
FROM rota_runs
WHERE state IN ('pending', 'claimed', 'running', 'retrying', 'dead_lettered')
GROUP BY namespace, queue, state
ORDER BY namespace, queue, state;

-- name: finished_counts
-- Runs finished since %(since)s per epoch-aligned bucket (rota_runs_finished).
SELECT to_timestamp(floor(extract(epoch FROM finished_at) / %(bucket)s) * %(bucket)s)
           AS bucket_start,
       namespace, queue, state, count(*) AS count
FROM rota_runs
WHERE finished_at IS NOT NULL AND finished_at >= %(since)s::timestamptz
GROUP BY 1, namespace, queue, state
ORDER BY 1, namespace, queue, state;
