-- The leader lease; its term is the leader's fencing token.

-- name: leader_term_holds
-- Inside a leader duty's transaction: the term is still current. The row lock keeps a
-- takeover waiting until the duty commits, so a deposed leader changes nothing.
SELECT term FROM rota_leases WHERE name = 'leader' AND term = %(term)s FOR SHARE;

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
-- Kept by a trigger on the lease row (migration 0007): one row per term.
SELECT term, holder, acquired_at FROM rota_leader_terms ORDER BY term DESC LIMIT %(limit)s;
