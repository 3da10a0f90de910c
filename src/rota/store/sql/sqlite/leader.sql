-- The leader lease; its term is the leader's fencing token.

-- name: leader_term_holds
-- Inside a leader duty's transaction (BEGIN IMMEDIATE: no takeover can interleave).
SELECT term FROM rota_leases WHERE name = 'leader' AND term = :term;

-- name: acquire_leadership
-- Renew if we hold the term we think we hold (even just past expiry: nobody took over);
-- otherwise take over only an expired lease, with term + 1.
INSERT INTO rota_leases (name, holder, term, acquired_at, expires_at)
VALUES ('leader', :holder, 1, :now, :now + :lease_seconds)
ON CONFLICT (name) DO UPDATE
SET term = CASE WHEN holder = excluded.holder AND term = :term THEN term ELSE term + 1 END,
    acquired_at = CASE WHEN holder = excluded.holder AND term = :term THEN acquired_at
                       ELSE excluded.acquired_at END,
    holder = excluded.holder,
    expires_at = excluded.expires_at
WHERE (holder = excluded.holder AND term = :term) OR expires_at < excluded.acquired_at
RETURNING term;

-- name: resign_leadership
UPDATE rota_leases SET expires_at = :now - 0.001
WHERE name = 'leader' AND holder = :holder AND term = :term;

-- name: leader
SELECT holder, term, acquired_at, expires_at FROM rota_leases WHERE name = 'leader';

-- name: leader_history
-- Kept by a trigger on the lease row (migration 0007): one row per term.
SELECT term, holder, acquired_at FROM rota_leader_terms ORDER BY term DESC LIMIT :limit;
