"""Settings: one frozen, validated object, built once (from arguments, flags or the
environment) and passed down. Nothing reads the environment after start-up."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

from rota.config.kinds import KINDS, parse_setting
from rota.config.secret_files import with_secret_files
from rota.config.sources import Sources
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


# Each field's default when its variable is not set (filled in by _from_environment).
DEFAULTS: dict[str, Any] = {}


def from_environment(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Every ``ROTA_<FIELD>`` variable set in ``environ`` (None: the process's), parsed
    and checked by its kind (setting_kinds.py): the first bad one is one line naming it.
    ``ROTA_DATABASE_URL`` may also come from the file ``ROTA_DATABASE_URL_FILE`` names."""
    environ = with_secret_files(environ)
    values: dict[str, Any] = {}
    for name in ("database_url", *KINDS):
        raw = environ.get(f"ROTA_{name.upper()}")
        if raw is not None:
            values[name] = _parsed(name, raw)
    return values


def _parsed(name: str, raw: str) -> Any:
    if name == "database_url":
        return check_url(raw)
    return parse_setting(f"ROTA_{name.upper()}", KINDS[name], raw)


def _from_environment(name: str, default: Any) -> Any:
    """A field's default: its ``ROTA_*`` variable when set, so ``Settings()`` and
    ``Settings.from_env()`` agree (a field given explicitly wins over both)."""

    DEFAULTS[name] = default

    def read() -> Any:
        raw = with_secret_files(os.environ).get(f"ROTA_{name.upper()}")
        return default if raw is None else _parsed(name, raw)

    return field(default_factory=read)


@dataclass(frozen=True)
class Settings:
    database_url: str = _from_environment("database_url", DEFAULT_DATABASE_URL)
    # A lease must outlive a few missed heartbeats: renew every lease_seconds / 3.
    lease_seconds: float = _from_environment("lease_seconds", 30.0)
    # Idle workers look for work this often even without a notification (PostgreSQL) or
    # on every tick (SQLite, which has no notifications).
    poll_seconds: float = _from_environment("poll_seconds", 1.0)
    sqlite_poll_seconds: float = _from_environment("sqlite_poll_seconds", 0.05)
    # A worker node starting while the database is unreachable (a dropped connection, a
    # restart, a database still coming up) keeps trying this long before it gives up.
    start_up_retry_seconds: float = _from_environment("start_up_retry_seconds", 30.0)
    # Linear priority aging: waiting this long is worth one priority level.
    aging_seconds: float = _from_environment("aging_seconds", 60.0)
    # Consecutive lost leases before a run counts as poison and is dead-lettered.
    poison_after: int = _from_environment("poison_after", 3)
    reap_interval_seconds: float = _from_environment("reap_interval_seconds", 5.0)
    # Workers report to the registry this often; one silent for worker_dead_seconds is
    # declared dead and its runs are taken back at once, without waiting for their leases.
    worker_heartbeat_seconds: float = _from_environment("worker_heartbeat_seconds", 2.0)
    worker_dead_seconds: float = _from_environment("worker_dead_seconds", 10.0)
    # The leader's lease: a dead leader is replaced within this long.
    leader_lease_seconds: float = _from_environment("leader_lease_seconds", 10.0)
    # The planner looks for due schedule slots this often, and creates their runs this
    # far ahead so they start on time.
    planner_interval_seconds: float = _from_environment("planner_interval_seconds", 1.0)
    # The leader vacuums the hot tables this often (PostgreSQL), whatever autovacuum does.
    vacuum_interval_seconds: float = _from_environment("vacuum_interval_seconds", 15.0)
    # Longer than a tick takes: planning 10,000 per-minute schedules takes ~5 s on two
    # busy cores, and every slot's runs must be committed before the slot.
    planner_horizon_seconds: float = _from_environment("planner_horizon_seconds", 15.0)
    # Finished runs older than this are pruned (with their attempts and logs).
    retention_seconds: float = _from_environment("retention_seconds", 7 * 24 * 3600.0)
    # Published events are kept this long (listed, and deduplicated by id), then pruned.
    event_retention_seconds: float = _from_environment("event_retention_seconds", 7 * 24 * 3600.0)
    shutdown_grace_seconds: float = _from_environment("shutdown_grace_seconds", 30.0)
    # How long a cancelled plain-def handler (or, on a timeout or a lost lease, any
    # handler) gets to stop by itself before its attempt is recorded Cancelled anyway and
    # its task abandoned. An operator's cancel cancels an async handler's task at once.
    cancel_grace_seconds: float = _from_environment("cancel_grace_seconds", 5.0)
    auto_migrate: bool = _from_environment("auto_migrate", True)
    pool_size: int = _from_environment("pool_size", 4)
    # PostgreSQL: handlers' transactions (ctx.transaction()) get connections from a pool
    # of their own, so they can never starve lease renewals. At most this many at once
    # (the default worker concurrency); a handler waits at most handler_pool_wait_seconds
    # for one, then its attempt ends and is retried without spending an attempt.
    handler_pool_size: int = _from_environment("handler_pool_size", 8)
    handler_pool_wait_seconds: float = _from_environment("handler_pool_wait_seconds", 10.0)
    # Server-side limits of a handler's transaction: a session idle inside it this long
    # (a stopped or cut-off process) is ended, its locks released and its work rolled back.
    handler_idle_in_transaction_seconds: float = _from_environment(
        "handler_idle_in_transaction_seconds", 60.0
    )
    handler_statement_timeout_seconds: float = _from_environment(
        "handler_statement_timeout_seconds", 300.0
    )
    handler_lock_timeout_seconds: float = _from_environment("handler_lock_timeout_seconds", 30.0)
    # Webhooks (docs/adr/0017-webhooks-outbox.md); a try's limit is webhook_timeout_seconds.
    # Loopback, link-local and private
    # receivers are refused unless this is on (SSRF; tests and private networks by choice).
    webhook_allow_private_addresses: bool = _from_environment(
        "webhook_allow_private_addresses", False
    )
    webhook_timeout_seconds: float = _from_environment("webhook_timeout_seconds", 10.0)
    # Tries per delivery, then it is abandoned; consecutive failed tries that disable a
    # subscription.
    webhook_max_tries: int = _from_environment("webhook_max_tries", 8)
    webhook_disable_after: int = _from_environment("webhook_disable_after", 20)
    # The most items one map step fans out over: a longer list fails the step with
    # MapTooLarge (its runs are created in one transaction). Read by every process
    # that completes runs, so set it alike across the cluster.
    map_max_items: int = _from_environment("map_max_items", DEFAULT_MAP_MAX_ITEMS)

    def __post_init__(self) -> None:
        check_url(self.database_url)
        for name, kind in KINDS.items():
            kind.check(name, getattr(self, name))

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
        """The configuration file ``ROTA_CONFIG`` names (rota.config.file), then
        ROTA_DATABASE_URL, ROTA_LEASE_SECONDS, ... (the field name, upper-cased), then
        ``overrides`` (None: not given). ``Settings()`` reads the environment the same
        way, but not the file; this reads ``environ`` instead when given."""
        given = {name: value for name, value in overrides.items() if value is not None}
        sources = Sources.read(environ)
        from_file = sources.file_fields("settings")
        from_file.pop("database_password", None)
        # A mapping given stands for the whole environment: the process's is not read.
        base = {} if environ is None else DEFAULTS
        values = {**base, **from_file, **from_environment(environ), **given}
        password = sources.value("database.password")
        if password is not None and "database_url" in values:
            values["database_url"] = with_password(check_url(values["database_url"]), password)
        return cls(**values)


def with_password(url: str, password: str) -> str:
    """A PostgreSQL ``url`` with ``password`` spliced in (ROTA_DATABASE_PASSWORD, so the
    URL can sit in a file and the password in a secret). A URL that holds a password
    already is refused: which one is meant cannot be guessed."""
    if url.startswith("sqlite:"):
        return url
    parts = urlsplit(url)
    if parts.password is not None:
        raise InvalidArgument(
            "database URL",
            redact_url(url),
            "no password in the URL when ROTA_DATABASE_PASSWORD (database.password) gives one",
        )
    user, at, host = parts.netloc.rpartition("@")
    credentials = f"{user}:{quote(password, safe='')}@" if at else f":{quote(password, safe='')}@"
    return urlunsplit(parts._replace(netloc=credentials + host))
