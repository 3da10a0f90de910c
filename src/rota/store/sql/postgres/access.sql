-- What the HTTP API keeps: API keys and the audit log.

-- name: insert_api_key
INSERT INTO rota_api_keys (key_id, secret_hash, name, scopes, namespaces, created_by,
                           created_at)
VALUES (%(key_id)s, %(secret_hash)s, %(name)s, %(scopes)b::text[], %(namespaces)b::text[],
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
WHERE (%(namespaces)b::text[] IS NULL OR namespace = ANY(%(namespaces)b::text[]))
  AND (%(before_id)s::bigint IS NULL OR id < %(before_id)s)
ORDER BY id DESC
LIMIT %(limit)s;

-- name: sign_out_session
-- Kept until the cookie would have expired; signing out twice keeps the first row.
INSERT INTO rota_signed_out_sessions (session_id, expires_at)
VALUES (%(session_id)s, %(expires_at)s)
ON CONFLICT (session_id) DO NOTHING;

-- name: prune_signed_out_sessions
-- A cookie past its expiry is refused by its signature check: its row is not needed.
DELETE FROM rota_signed_out_sessions
WHERE expires_at <= COALESCE(%(now)s::timestamptz, now());

-- name: session_signed_out
SELECT 1 AS found FROM rota_signed_out_sessions WHERE session_id = %(session_id)s;
