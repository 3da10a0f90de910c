"""Settings: one frozen, validated object, built once (from arguments, flags or the
environment) and passed down. Nothing reads the environment after start-up."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from rota.domain.workflows import DEFAULT_MAP_MAX_ITEMS
from rota.errors import InvalidArgument
from rota.redact import redact_url

DEFAULT_DATABASE_URL = "sqlite:///rota.db"
SUPPORTED_URLS = "sqlite:///PATH (the default is sqlite:///rota.db) or postgresql://USER@HOST/DB"


def check_url(url: object) -> str:
    if not isinstance(url, str) or not url.startswith(
        ("sqlite:///", "postgresql://", "postgres://")
    ):
        shown = redact_url(url) if isinstance(url, str) else url
        raise InvalidArgument("database URL", shown, SUPPORTED_URLS)
    return url


@dataclass(frozen=True)
class Settings:
    database_url: str = DEFAULT_DATABASE_URL
    # A lease must outlive a few missed heartbeats: renew every lease_seconds / 3.
    lease_seconds: float = 30.0
    # Idle workers look for work this often even without a notification (PostgreSQL) or
    # on every tick (SQLite, which has no notifications).
    poll_seconds: float = 1.0
    sqlite_poll_seconds: float = 0.05
    # Linear priority aging: waiting this long is worth one priority level.
    aging_seconds: float = 60.0
    # Consecutive lost leases before a run counts as poison and is dead-lettered.
    poison_after: int = 3
    reap_interval_seconds: float = 5.0
    # Workers report to the registry this often; one silent for worker_dead_seconds is
    # declared dead and its runs are taken back at once, without waiting for their leases.
    worker_heartbeat_seconds: float = 2.0
    worker_dead_seconds: float = 10.0
    # The leader's lease: a dead leader is replaced within this long.
    leader_lease_seconds: float = 10.0
    # The planner looks for due schedule slots this often, and creates their runs this
    # far ahead so they start on time.
    planner_interval_seconds: float = 1.0
    # The leader vacuums the hot tables this often (PostgreSQL), whatever autovacuum does.
    vacuum_interval_seconds: float = 15.0
    # Longer than a tick takes: planning 10,000 per-minute schedules takes ~5 s on two
    # busy cores, and every slot's runs must be committed before the slot.
    planner_horizon_seconds: float = 15.0
    # Finished runs older than this are pruned (with their attempts and logs).
    retention_seconds: float = 7 * 24 * 3600.0
    # Published events are kept this long (listed, and deduplicated by id), then pruned.
    event_retention_seconds: float = 7 * 24 * 3600.0
    shutdown_grace_seconds: float = 30.0
    # How long a handler that ignores cancellation gets before its attempt is recorded
    # Cancelled anyway and its task abandoned.
    cancel_grace_seconds: float = 5.0
    auto_migrate: bool = True
    pool_size: int = 4
    # PostgreSQL: handlers' transactions (ctx.transaction()) get connections from a pool
    # of their own, so they can never starve lease renewals. At most this many at once
    # (the default worker concurrency); a handler waits at most handler_pool_wait_seconds
    # for one, then its attempt ends and is retried without spending an attempt.
    handler_pool_size: int = 8
    handler_pool_wait_seconds: float = 10.0
    # Server-side limits of a handler's transaction: a session idle inside it this long
    # (a stopped or cut-off process) is ended, its locks released and its work rolled back.
    handler_idle_in_transaction_seconds: float = 60.0
    handler_statement_timeout_seconds: float = 300.0
    handler_lock_timeout_seconds: float = 30.0
    # Webhooks (docs/adr/0017-webhooks-outbox.md). Loopback, link-local and private
    # receivers are refused unless this is on (SSRF; tests and private networks by choice).
    webhook_allow_private_addresses: bool = False
    webhook_timeout_seconds: float = 10.0  # per try
    webhook_max_tries: int = 8  # per delivery, then it is abandoned
    webhook_disable_after: int = 20  # consecutive failed tries disable a subscription
    # The most items one map step fans out over: a longer list fails the step with
    # MapTooLarge (its runs are created in one transaction). Read by every process
    # that completes runs, so set it alike across the cluster.
    map_max_items: int = DEFAULT_MAP_MAX_ITEMS

    def __post_init__(self) -> None:
        check_url(self.database_url)
        for name in (
            "lease_seconds",
            "poll_seconds",
            "sqlite_poll_seconds",
            "aging_seconds",
            "reap_interval_seconds",
            "leader_lease_seconds",
            "worker_heartbeat_seconds",
            "worker_dead_seconds",
            "planner_interval_seconds",
            "vacuum_interval_seconds",
            "planner_horizon_seconds",
            "retention_seconds",
            "event_retention_seconds",
            "cancel_grace_seconds",
            "handler_pool_wait_seconds",
            "handler_idle_in_transaction_seconds",
            "handler_statement_timeout_seconds",
            "handler_lock_timeout_seconds",
            "webhook_timeout_seconds",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise InvalidArgument(name, value, "a number of seconds > 0")
        if self.shutdown_grace_seconds < 0:
            raise InvalidArgument(
                "shutdown_grace_seconds", self.shutdown_grace_seconds, "a number of seconds >= 0"
            )
        for name in (
            "poison_after",
            "pool_size",
            "handler_pool_size",
            "webhook_max_tries",
            "webhook_disable_after",
            "map_max_items",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidArgument(name, value, "an integer >= 1")

    def __repr__(self) -> str:
        # The URL may hold the database password; settings end up in logs and errors.
        shown = ", ".join(
            f"{f.name}={redact_url(self.database_url)!r}"
            if f.name == "database_url"
            else f"{f.name}={getattr(self, f.name)!r}"
            for f in fields(self)
        )
        return f"Settings({shown})"

    @property
    def heartbeat_seconds(self) -> float:
        return self.lease_seconds / 3

    def with_overrides(self, **overrides: Any) -> Settings:
        known = {f.name for f in fields(self)}
        for key in overrides:
            if key not in known:
                raise InvalidArgument("setting", key, f"one of {', '.join(sorted(known))}")
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """ROTA_DATABASE_URL, ROTA_LEASE_SECONDS, ... (the field name, upper-cased)."""
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for field in fields(cls):
            raw = environ.get(f"ROTA_{field.name.upper()}")
            if raw is None:
                continue
            values[field.name] = _parse(field.name, field.type, raw)
        return cls(**values).with_overrides(**overrides)


def _parse(name: str, kind: Any, raw: str) -> Any:
    kind = str(kind)
    try:
        if kind == "bool":
            if raw.lower() in {"1", "true", "yes", "on"}:
                return True
            if raw.lower() in {"0", "false", "no", "off"}:
                return False
            raise ValueError(raw)
        if kind == "int":
            return int(raw)
        if kind == "float":
            return float(raw)
    except ValueError:
        raise InvalidArgument(f"ROTA_{name.upper()}", raw, f"a {kind}") from None
    return raw
