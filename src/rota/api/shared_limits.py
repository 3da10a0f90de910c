"""The API's request rate limit and failed-authentication budgets, held in the database
so that N server processes allow what one does (ADR 0036).

Requests: ``rate_burst`` per caller per window of ``rate_burst / rate_per_second``
seconds (the window starts at the caller's first request after the last one ended).
Failed authentications: ``failed_auth_burst`` per source address and per claimed
credential per ``failed_auth_window_seconds``. Both answer 429 with Retry-After, as the
in-process limiter did.

When the database cannot answer, the limits *fail towards this process's own limiter*
(rota.api.ratelimit, the per-process bucket and budget of before): never unlimited,
never a 429 for everyone. The API can do little without its database, but JWT callers
still pass authentication, and a guesser must not get free guesses meanwhile.
"""

from __future__ import annotations

from collections.abc import Sequence

import structlog

from rota.api.ratelimit import FailureBudget, RateLimiter
from rota.api.settings import ApiSettings
from rota.app import App
from rota.domain.api_limits import rate_window_seconds
from rota.errors import StoreError
from rota.services import api_limits

WARN_EVERY_SECONDS = 60.0  # one warning per this while the database cannot answer
log = structlog.get_logger("rota.api.limits")


class SharedLimits:
    def __init__(self, rota_app: App, settings: ApiSettings) -> None:
        self._app = rota_app
        self.request_limit = settings.rate_burst
        self.request_window = rate_window_seconds(settings.rate_per_second, settings.rate_burst)
        self.failure_budget = settings.failed_auth_burst
        self.failure_window = settings.failed_auth_window_seconds
        monotonic = rota_app.clock.monotonic
        self.local_requests = RateLimiter(settings.rate_per_second, settings.rate_burst, monotonic)
        self.local_failures = FailureBudget(
            settings.failed_auth_burst, settings.failed_auth_window_seconds, monotonic
        )
        self._warned_at: float | None = None

    async def take(self, subject: str) -> float | None:
        """Count one request of ``subject``: None if allowed, else the seconds to wait."""
        try:
            store = await self._app.store()
            return await api_limits.spend_request(
                store, self._app.clock, subject, self.request_limit, self.request_window
            )
        except StoreError as exc:
            self._warn(exc)
            return self.local_requests.take(subject)

    async def blocked(self, keys: Sequence[str]) -> float | None:
        """Seconds until every one of ``keys`` may try to authenticate again, or None."""
        try:
            store = await self._app.store()
            return await api_limits.auth_blocked(store, self._app.clock, keys, self.failure_budget)
        except StoreError as exc:
            self._warn(exc)
            waits = [w for w in map(self.local_failures.blocked, keys) if w is not None]
            return max(waits, default=None)

    async def fail(self, keys: Sequence[str]) -> None:
        """Count one failed authentication against each of ``keys``. This process's own
        budget counts it too, so it already knows the guesser if the database goes."""
        for key in keys:
            self.local_failures.fail(key)
        try:
            store = await self._app.store()
            await api_limits.auth_failed(store, self._app.clock, keys, self.failure_window)
        except StoreError as exc:
            self._warn(exc)

    def _warn(self, exc: StoreError) -> None:
        now = self._app.clock.monotonic()
        if self._warned_at is not None and now - self._warned_at < WARN_EVERY_SECONDS:
            return
        self._warned_at = now
        log.warning(
            "the database cannot count API limits; this process's own limits decide meanwhile",
            error=str(exc),
        )
