"""The HTTP API's settings: one frozen, validated object built once (flags, environment).

Production is the default: without ``ROTA_ENV`` the server has no dev token endpoint and
refuses to start without a real signing key (``ROTA_JWT_SECRET``, 32+ bytes, not a
repeated pattern). Development mode is asked for explicitly (``ROTA_ENV=development`` or
``rota server --dev``) and only ever serves a loopback address; there a well-known
development key is used when none is set, and a warning says so. docs/security.md.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from rota.config.sources import Sources
from rota.endpoint import is_loopback
from rota.errors import InvalidArgument, RotaError
from rota.observe.scrape import check_scrape_token
from rota.redact import Secret

# Public on purpose: anyone can mint tokens with it, so production refuses it.
DEV_SIGNING_KEY = "rota-development-signing-key-do-not-use-in-production"
MIN_KEY_BYTES = 32  # HS256 keys shorter than the hash output are brute-forceable
# A key of 32+ bytes drawn from very few characters ("aaaa...", spaces) is long but not
# random; any generated key (token_urlsafe, hex) has far more distinct characters.
MIN_KEY_DISTINCT_CHARACTERS = 10
MAX_LEEWAY_SECONDS = 30.0
ENVIRONMENTS = ("development", "test", "production")


class InsecureConfiguration(RotaError):
    """The server would start in a state that is not safe for its environment."""


def weak_key_reason(key: str) -> str | None:
    """Why ``key`` is not fit to sign tokens, or None. Never names the key itself."""
    size = len(key.encode())
    if size < MIN_KEY_BYTES:
        return f"is {size} bytes; an HS256 signing key needs at least {MIN_KEY_BYTES}"
    distinct = len(set(key.strip()))
    if distinct < MIN_KEY_DISTINCT_CHARACTERS:
        return (
            f"has only {distinct} distinct characters; a random key has many more "
            f"(at least {MIN_KEY_DISTINCT_CHARACTERS} are required)"
        )
    return None


@dataclass(frozen=True)
class ApiSettings:
    env: str = "production"
    # None: DEV_SIGNING_KEY, outside production only. A str is wrapped in a Secret.
    signing_key: Secret | str | None = None
    issuer: str = "rota"
    audience: str = "rota-api"
    leeway_seconds: float = 10.0
    dev_token_ttl_seconds: int = 3600
    # No token is accepted whose lifetime (exp - iat) is longer than this.
    max_token_lifetime_seconds: int = 24 * 3600
    body_limit_bytes: int = 1024 * 1024
    # Per caller (a token's sub, an API key's id), counted in the database for every
    # server process: rate_burst requests per rate_burst / rate_per_second seconds.
    rate_per_second: float = 20.0
    rate_burst: int = 60
    # Failed authentications: this many per window per source address and per
    # credential id; once spent, every request from that address or with that
    # credential is 429 until the window ends, right credential or not.
    failed_auth_burst: int = 20
    failed_auth_window_seconds: float = 300.0
    # X-Forwarded-For / X-Forwarded-Proto are believed only from these addresses or
    # networks (a reverse proxy); empty: never, the TCP peer is the client.
    trusted_proxies: tuple[str, ...] = ()
    # Throttled calls and failed authentications are audited once per caller or source
    # address per this window, with a count of the ones left out (flood-proofing).
    audit_sample_window_seconds: float = 60.0
    # /health/ready is 503 when a due run has waited longer than this for a worker.
    ready_max_due_wait_seconds: float = 300.0
    # What `rota server` runs beside the API on the same event loop.
    embedded_worker: bool = False
    embedded_leader: bool = False
    worker_concurrency: int = 8
    node_id: str | None = None
    # A bearer token Prometheus may scrape /metrics with (full view), besides any
    # credential holding metrics:read. A str is wrapped in a Secret.
    metrics_token: Secret | str | None = None

    def __post_init__(self) -> None:
        if self.env not in ENVIRONMENTS:
            raise InvalidArgument("ROTA_ENV", self.env, f"one of {', '.join(ENVIRONMENTS)}")
        if not 0 <= self.leeway_seconds <= MAX_LEEWAY_SECONDS:
            raise InvalidArgument(
                "leeway_seconds", self.leeway_seconds, f"0-{MAX_LEEWAY_SECONDS:g} seconds"
            )
        for name in (
            "body_limit_bytes",
            "rate_burst",
            "failed_auth_burst",
            "dev_token_ttl_seconds",
            "max_token_lifetime_seconds",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidArgument(name, value, "an integer >= 1")
        for name in (
            "rate_per_second",
            "failed_auth_window_seconds",
            "audit_sample_window_seconds",
            "ready_max_due_wait_seconds",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise InvalidArgument(name, value, "a number > 0")
        if self.dev_token_ttl_seconds > self.max_token_lifetime_seconds:
            raise InvalidArgument(
                "dev_token_ttl_seconds",
                self.dev_token_ttl_seconds,
                f"at most max_token_lifetime_seconds ({self.max_token_lifetime_seconds})",
            )
        for proxy in self.trusted_proxies:
            try:
                ipaddress.ip_network(proxy, strict=False)
            except ValueError:
                raise InvalidArgument(
                    "ROTA_TRUSTED_PROXIES", proxy, "IP addresses or networks (10.0.0.0/8)"
                ) from None
        if isinstance(self.metrics_token, str):
            object.__setattr__(self, "metrics_token", check_scrape_token(self.metrics_token))
        key = self.signing_key
        if isinstance(key, str):
            key = Secret(key)
            object.__setattr__(self, "signing_key", key)
        if key is not None:
            reason = weak_key_reason(key.reveal())
            if reason is not None:
                raise InsecureConfiguration(
                    f"ROTA_JWT_SECRET {reason} (make one with `python -c 'import secrets; "
                    "print(secrets.token_urlsafe(48))'`)"
                )

    @property
    def production(self) -> bool:
        return self.env == "production"

    @property
    def dev_tokens(self) -> bool:
        """Whether POST /dev/token exists: never in production."""
        return not self.production

    @property
    def uses_public_key(self) -> bool:
        """True when tokens are signed with the published development key."""
        return self.signing_key is None or self.signing_key == Secret(DEV_SIGNING_KEY)

    @property
    def key(self) -> str:
        """The signing key itself: for signing and checking tokens, nothing else."""
        if isinstance(self.signing_key, Secret):
            return self.signing_key.reveal()
        return DEV_SIGNING_KEY

    def check_startable(self) -> None:
        """Refuse to serve production with a missing or well-known signing key."""
        if not self.production:
            return
        if self.signing_key is None:
            raise InsecureConfiguration(
                "production (the default; ROTA_ENV=development or --dev for a local "
                "development server) needs a signing key: set ROTA_JWT_SECRET to a random "
                f"secret of at least {MIN_KEY_BYTES} bytes"
            )
        if self.uses_public_key:
            raise InsecureConfiguration(
                "ROTA_JWT_SECRET is the public development key; production needs its own secret"
            )

    def check_bind(self, host: str) -> None:
        """Development mode hands out admin tokens to anyone who asks: only on loopback."""
        if self.dev_tokens and not is_loopback(host):
            raise InsecureConfiguration(
                f"development mode (ROTA_ENV={self.env}) mints admin tokens for anyone who "
                f"can reach the port, so it serves loopback only, not {host!r}: bind "
                "127.0.0.1, or run in production with ROTA_JWT_SECRET set"
            )

    def with_overrides(self, **overrides: Any) -> ApiSettings:
        known = {f.name for f in fields(self)}
        for key in overrides:
            if key not in known:
                raise InvalidArgument("API setting", key, f"one of {', '.join(sorted(known))}")
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> ApiSettings:
        """Every API setting of rota.config.schema (ROTA_ENV, ROTA_JWT_SECRET or
        ROTA_JWT_SECRET_FILE, ROTA_API_RATE_PER_SECOND, ROTA_TRUSTED_PROXIES
        (comma-separated), ...) from ``environ`` (None: the process's), over the
        configuration file ROTA_CONFIG names, then ``overrides`` (None: not given)."""
        values = Sources.read(environ).fields("api")
        if "trusted_proxies" in values:
            values["trusted_proxies"] = tuple(values["trusted_proxies"])
        return cls(**values).with_overrides(**overrides)
