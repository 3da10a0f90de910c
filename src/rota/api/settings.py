"""The HTTP API's settings: one frozen, validated object built once (flags, environment).

``ROTA_ENV=production`` turns off the dev token endpoint and refuses to start without a
real signing key (``ROTA_JWT_SECRET``); outside production a well-known development key
is used when none is set, and a warning says so.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from rota.errors import InvalidArgument, RotaError

# Public on purpose: anyone can mint tokens with it, so production refuses it.
DEV_SIGNING_KEY = "rota-development-signing-key-do-not-use-in-production"
MIN_KEY_BYTES = 32  # HS256 keys shorter than the hash output are brute-forceable
MAX_LEEWAY_SECONDS = 30.0
ENVIRONMENTS = ("development", "test", "production")


class InsecureConfiguration(RotaError):
    """The server would start in a state that is not safe for its environment."""


@dataclass(frozen=True)
class ApiSettings:
    env: str = "development"
    signing_key: str | None = None  # None: DEV_SIGNING_KEY, outside production only
    issuer: str = "rota"
    audience: str = "rota-api"
    leeway_seconds: float = 10.0
    dev_token_ttl_seconds: int = 3600
    body_limit_bytes: int = 1024 * 1024
    # Token bucket per subject (a token's sub, an API key's id), per server process.
    rate_per_second: float = 20.0
    rate_burst: int = 60
    # Failed authentications per client address: guessing keys or tokens costs this.
    failed_auth_per_second: float = 1.0
    failed_auth_burst: int = 20
    # /health/ready is 503 when a due run has waited longer than this for a worker.
    ready_max_due_wait_seconds: float = 300.0
    # What `rota server` runs beside the API on the same event loop.
    embedded_worker: bool = False
    embedded_leader: bool = False
    worker_concurrency: int = 8
    node_id: str | None = None

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
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidArgument(name, value, "an integer >= 1")
        for name in ("rate_per_second", "failed_auth_per_second", "ready_max_due_wait_seconds"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise InvalidArgument(name, value, "a number > 0")
        if self.signing_key is not None and len(self.signing_key.encode()) < MIN_KEY_BYTES:
            raise InsecureConfiguration(
                f"ROTA_JWT_SECRET is {len(self.signing_key.encode())} bytes; an HS256 signing "
                f"key needs at least {MIN_KEY_BYTES} (e.g. `python -c 'import secrets; "
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
    def key(self) -> str:
        return self.signing_key or DEV_SIGNING_KEY

    def check_startable(self) -> None:
        """Refuse to serve production with a missing or well-known signing key."""
        if not self.production:
            return
        if self.signing_key is None:
            raise InsecureConfiguration(
                "ROTA_ENV=production needs a signing key: set ROTA_JWT_SECRET to a random "
                f"secret of at least {MIN_KEY_BYTES} bytes"
            )
        if self.signing_key == DEV_SIGNING_KEY:
            raise InsecureConfiguration(
                "ROTA_JWT_SECRET is the public development key; production needs its own secret"
            )

    def with_overrides(self, **overrides: Any) -> ApiSettings:
        known = {f.name for f in fields(self)}
        for key in overrides:
            if key not in known:
                raise InvalidArgument("API setting", key, f"one of {', '.join(sorted(known))}")
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> ApiSettings:
        """ROTA_ENV, ROTA_JWT_SECRET, ROTA_JWT_ISSUER, ROTA_JWT_AUDIENCE,
        ROTA_API_RATE_PER_SECOND, ROTA_API_RATE_BURST, ROTA_API_BODY_LIMIT_BYTES,
        ROTA_READY_MAX_DUE_WAIT_SECONDS."""
        environ = os.environ if environ is None else environ
        names = {
            "ROTA_ENV": ("env", str),
            "ROTA_JWT_SECRET": ("signing_key", str),
            "ROTA_JWT_ISSUER": ("issuer", str),
            "ROTA_JWT_AUDIENCE": ("audience", str),
            "ROTA_API_RATE_PER_SECOND": ("rate_per_second", float),
            "ROTA_API_RATE_BURST": ("rate_burst", int),
            "ROTA_API_BODY_LIMIT_BYTES": ("body_limit_bytes", int),
            "ROTA_READY_MAX_DUE_WAIT_SECONDS": ("ready_max_due_wait_seconds", float),
        }
        values: dict[str, Any] = {}
        for variable, (name, kind) in names.items():
            raw = environ.get(variable)
            if raw is None or raw == "":
                continue
            try:
                values[name] = kind(raw)
            except ValueError:
                raise InvalidArgument(variable, raw, f"a {kind.__name__}") from None
        return cls(**values).with_overrides(**overrides)
