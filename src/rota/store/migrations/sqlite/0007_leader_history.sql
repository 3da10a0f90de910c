-- rota schema version 7 (SQLite): leader history, for the dashboard's leader page.
-- One row per leadership term: who took it and when. A trigger on the lease row keeps
-- it, so no code path that changes the term can forget to (and a deposed leader's
-- renewals, which change nothing, add nothing). The newest 1,000 terms are kept.

CREATE TABLE rota_leader_terms (
    term        INTEGER PRIMARY KEY,
    holder      TEXT NOT NULL,
    acquired_at REAL NOT NULL
);

INSERT INTO rota_leader_terms (term, holder, acquired_at)
SELECT term, holder, acquired_at FROM rota_leases WHERE name = 'leader';

CREATE TRIGGER rota_leader_term_started AFTER INSERT ON rota_leases
WHEN NEW.name = 'leader'
BEGIN
    INSERT OR IGNORE INTO rota_leader_terms (term, holder, acquired_at)
    VALUES (NEW.term, NEW.holder, NEW.acquired_at);
END;

CREATE TRIGGER rota_leader_term_changed AFTER UPDATE OF term ON rota_leases
WHEN NEW.name = 'leader' AND NEW.term <> OLD.term
BEGIN
    INSERT OR IGNORE INTO rota_leader_terms (term, holder, acquired_at)
    VALUES (NEW.term, NEW.holder, NEW.acquired_at);
    DELETE FROM rota_leader_terms WHERE term <= NEW.term - 1000;
END;
