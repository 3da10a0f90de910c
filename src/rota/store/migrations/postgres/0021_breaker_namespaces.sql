-- rota schema version 21 (PostgreSQL): which namespaces a circuit breaker's outcomes
-- came from (issue 31, ADR 0028). A breaker is keyed by (handler, breaker_key), shared
-- by every namespace whose runs use that handler; a caller limited to some namespaces
-- is shown only the breakers runs of those namespaces moved. A row is added (once) by
-- the transaction that records a run's outcome to a breaker.
--
-- Breakers from before this version have no rows yet: until a run's outcome moves
-- them again, only callers who reach every namespace see them (closed to the others,
-- rather than guessed from the runs table).

CREATE TABLE rota_breaker_namespaces (
    handler     text NOT NULL,
    breaker_key text NOT NULL,
    namespace   text NOT NULL,
    PRIMARY KEY (handler, breaker_key, namespace)
);
-- Listing by namespace: "the breakers these namespaces moved".
CREATE INDEX rota_breaker_namespaces_by_namespace
    ON rota_breaker_namespaces (namespace, handler, breaker_key);
