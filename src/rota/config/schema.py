"""Every setting rota has, once: its key in ``rota.yaml`` (grouped), its ``ROTA_*``
variable, its kind (rota.config.kinds: what it may hold) and which object it feeds.

``rota.Settings`` (the engine), ``rota.api.settings.ApiSettings`` (the HTTP API) and the
command line's own options (where to listen, TLS, what a worker serves, where the
client looks) all read their values through this table, so a key, a variable and a
check can never disagree. docs/configuration.md shows the file; ADR 0031 says why."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rota.config import kinds as k
from rota.config.kinds import KINDS, Kind

Target = Literal["settings", "api", "cli"]


@dataclass(frozen=True)
class Entry:
    key: str  # as written in rota.yaml: group.name
    variable: str  # ROTA_*
    kind: Kind
    target: Target
    field: str  # the name in its target (rota.Settings' field, ApiSettings', an option)
    secret: bool = False  # never shown; also read from the file ROTA_*_FILE names

    @property
    def group(self) -> str:
        return self.key.partition(".")[0]


def _engine(key: str, field: str) -> Entry:
    """A field of rota.Settings: its variable is its name, upper-cased (as always)."""
    return Entry(key, f"ROTA_{field.upper()}", KINDS[field], "settings", field)


URL = k.Kind(str, "sqlite:///PATH or postgresql://USER@HOST/DB")

ENTRIES: tuple[Entry, ...] = (
    # -- database ---------------------------------------------------------------------
    Entry("database.url", "ROTA_DATABASE_URL", URL, "settings", "database_url", secret=True),
    # Spliced into a PostgreSQL URL that has none, so the URL can sit in the file and
    # the password in a secret (ROTA_DATABASE_PASSWORD_FILE).
    Entry(
        "database.password",
        "ROTA_DATABASE_PASSWORD",
        k.TEXT,
        "settings",
        "database_password",
        secret=True,
    ),
    _engine("database.auto_migrate", "auto_migrate"),
    _engine("database.pool_size", "pool_size"),
    _engine("database.handler_pool_size", "handler_pool_size"),
    _engine("database.handler_pool_wait_seconds", "handler_pool_wait_seconds"),
    _engine("database.handler_idle_in_transaction_seconds", "handler_idle_in_transaction_seconds"),
    _engine("database.handler_statement_timeout_seconds", "handler_statement_timeout_seconds"),
    _engine("database.handler_lock_timeout_seconds", "handler_lock_timeout_seconds"),
    # -- server (rota server) ---------------------------------------------------------
    Entry("server.host", "ROTA_HOST", k.TEXT, "cli", "host"),
    Entry("server.port", "ROTA_PORT", k.PORT, "cli", "port"),
    Entry("server.env", "ROTA_ENV", k.ENVIRONMENT, "api", "env"),
    Entry("server.embedded_worker", "ROTA_EMBEDDED_WORKER", k.SWITCH, "api", "embedded_worker"),
    Entry("server.embedded_leader", "ROTA_EMBEDDED_LEADER", k.SWITCH, "api", "embedded_leader"),
    Entry("server.concurrency", "ROTA_SERVER_CONCURRENCY", k.COUNT, "api", "worker_concurrency"),
    Entry(
        "server.body_limit_bytes", "ROTA_API_BODY_LIMIT_BYTES", k.BYTES, "api", "body_limit_bytes"
    ),
    Entry("server.rate_per_second", "ROTA_API_RATE_PER_SECOND", k.NUMBER, "api", "rate_per_second"),
    Entry("server.rate_burst", "ROTA_API_RATE_BURST", k.COUNT, "api", "rate_burst"),
    Entry("server.trusted_proxies", "ROTA_TRUSTED_PROXIES", k.TEXTS, "api", "trusted_proxies"),
    Entry(
        "server.ready_max_due_wait_seconds",
        "ROTA_READY_MAX_DUE_WAIT_SECONDS",
        k.NUMBER,
        "api",
        "ready_max_due_wait_seconds",
    ),
    Entry(
        "server.audit_sample_window_seconds",
        "ROTA_AUDIT_SAMPLE_WINDOW_SECONDS",
        k.NUMBER,
        "api",
        "audit_sample_window_seconds",
    ),
    # -- worker (rota worker, and the server's embedded worker) -----------------------
    Entry("worker.concurrency", "ROTA_WORKER_CONCURRENCY", k.COUNT, "cli", "concurrency"),
    Entry("worker.node_id", "ROTA_NODE_ID", k.TEXT, "cli", "node_id"),
    Entry("worker.queues", "ROTA_QUEUES", k.TEXTS, "cli", "queues"),
    Entry("worker.tags", "ROTA_TAGS", k.TEXTS, "cli", "tags"),
    Entry("worker.loop", "ROTA_LOOP", k.LOOP, "cli", "loop"),
    Entry("worker.http", "ROTA_WORKER_HTTP", k.TEXT, "cli", "http"),
    _engine("worker.lease_seconds", "lease_seconds"),
    _engine("worker.poll_seconds", "poll_seconds"),
    _engine("worker.sqlite_poll_seconds", "sqlite_poll_seconds"),
    _engine("worker.start_up_retry_seconds", "start_up_retry_seconds"),
    _engine("worker.aging_seconds", "aging_seconds"),
    _engine("worker.poison_after", "poison_after"),
    _engine("worker.heartbeat_seconds", "worker_heartbeat_seconds"),
    _engine("worker.dead_seconds", "worker_dead_seconds"),
    _engine("worker.shutdown_grace_seconds", "shutdown_grace_seconds"),
    _engine("worker.cancel_grace_seconds", "cancel_grace_seconds"),
    _engine("worker.map_max_items", "map_max_items"),
    # -- auth (the API's tokens) ------------------------------------------------------
    Entry("auth.jwt_secret", "ROTA_JWT_SECRET", k.TEXT, "api", "signing_key", secret=True),
    Entry("auth.issuer", "ROTA_JWT_ISSUER", k.TEXT, "api", "issuer"),
    Entry("auth.audience", "ROTA_JWT_AUDIENCE", k.TEXT, "api", "audience"),
    Entry("auth.leeway_seconds", "ROTA_JWT_LEEWAY_SECONDS", k.LEEWAY, "api", "leeway_seconds"),
    Entry(
        "auth.dev_token_ttl_seconds",
        "ROTA_DEV_TOKEN_TTL_SECONDS",
        k.COUNT,
        "api",
        "dev_token_ttl_seconds",
    ),
    Entry(
        "auth.max_token_lifetime_seconds",
        "ROTA_MAX_TOKEN_LIFETIME_SECONDS",
        k.COUNT,
        "api",
        "max_token_lifetime_seconds",
    ),
    Entry("auth.failed_auth_burst", "ROTA_FAILED_AUTH_BURST", k.COUNT, "api", "failed_auth_burst"),
    Entry(
        "auth.failed_auth_window_seconds",
        "ROTA_FAILED_AUTH_WINDOW_SECONDS",
        k.NUMBER,
        "api",
        "failed_auth_window_seconds",
    ),
    # -- leader (planning and housekeeping) -------------------------------------------
    _engine("leader.lease_seconds", "leader_lease_seconds"),
    _engine("leader.planner_interval_seconds", "planner_interval_seconds"),
    _engine("leader.planner_horizon_seconds", "planner_horizon_seconds"),
    _engine("leader.reap_interval_seconds", "reap_interval_seconds"),
    _engine("leader.vacuum_interval_seconds", "vacuum_interval_seconds"),
    # -- retention --------------------------------------------------------------------
    _engine("retention.runs_seconds", "retention_seconds"),
    _engine("retention.events_seconds", "event_retention_seconds"),
    # -- metrics ----------------------------------------------------------------------
    Entry("metrics.token", "ROTA_METRICS_TOKEN", k.TEXT, "api", "metrics_token", secret=True),
    # -- webhooks ---------------------------------------------------------------------
    _engine("webhooks.allow_private_addresses", "webhook_allow_private_addresses"),
    _engine("webhooks.timeout_seconds", "webhook_timeout_seconds"),
    _engine("webhooks.max_tries", "webhook_max_tries"),
    _engine("webhooks.disable_after", "webhook_disable_after"),
    # -- tls (every listener: rota server, rota worker --http) ------------------------
    Entry("tls.cert", "ROTA_TLS_CERT", k.PATH, "cli", "tls_cert"),
    Entry("tls.key", "ROTA_TLS_KEY", k.PATH, "cli", "tls_key"),
    Entry("tls.ca", "ROTA_TLS_CA", k.PATH, "cli", "tls_ca"),
    # -- client (the rota CLI's API commands) -----------------------------------------
    Entry("client.url", "ROTA_URL", k.TEXT, "cli", "url"),
    Entry("client.token", "ROTA_TOKEN", k.TEXT, "cli", "token", secret=True),
    Entry("client.ca_file", "ROTA_CA_FILE", k.PATH, "cli", "ca_file"),
)

BY_KEY: dict[str, Entry] = {entry.key: entry for entry in ENTRIES}
BY_VARIABLE: dict[str, Entry] = {entry.variable: entry for entry in ENTRIES}
SECRET_VARIABLES: tuple[str, ...] = tuple(e.variable for e in ENTRIES if e.secret)


def for_target(target: Target) -> tuple[Entry, ...]:
    return tuple(entry for entry in ENTRIES if entry.target == target)


def cli_entry(field: str) -> Entry:
    return next(e for e in ENTRIES if e.target == "cli" and e.field == field)
