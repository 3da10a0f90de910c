-- rota schema version 7 (PostgreSQL): leader history, for the dashboard's leader page.
-- One row per leadership term: who took it and when. A trigger on the lease row keeps
-- it, so no code path that changes the term can forget to (and a deposed leader's
-- renewals, which change nothing, add nothing). The newest 1,000 terms are kept.

CREATE TABLE rota_leader_terms (
    term        bigint PRIMARY KEY,
    holder      text NOT NULL,
    acquired_at timestamptz NOT NULL
);

INSERT INTO rota_leader_terms (term, holder, acquired_at)
SELECT term, holder, acquired_at FROM rota_leases WHERE name = 'leader';

CREATE FUNCTION rota_record_leader_term() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.name = 'leader' AND (TG_OP = 'INSERT' OR NEW.term <> OLD.term) THEN
        INSERT INTO rota_leader_terms (term, holder, acquired_at)
        VALUES (NEW.term, NEW.holder, NEW.acquired_at)
        ON CONFLICT (term) DO NOTHING;
        DELETE FROM rota_leader_terms WHERE term <= NEW.term - 1000;
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER rota_leader_term_changed AFTER INSERT OR UPDATE OF term ON rota_leases
FOR EACH ROW EXECUTE FUNCTION rota_record_leader_term();
