"""``App.handler``: registering handlers on an App."""

from __future__ import annotations

from collections.abc import Callable

from rota.app.base import AppBase
from rota.domain.breakers import Breaker
from rota.domain.retry import RetryPolicy
from rota.handlers import HandlerFn, make_spec


class AppHandlers(AppBase):
    """The decorator that registers a handler with its options."""

    def handler(
        self,
        name: str | None = None,
        *,
        queue: str = "default",
        max_attempts: int = 3,
        timeout: float | None = None,
        retry: RetryPolicy | None = None,
        priority: int = 5,
        retry_timeouts: bool = True,
        tags: tuple[str, ...] | list[str] = (),
        concurrency_limit: int | None = None,
        singleton: bool = False,
        key_limit: int = 1,
        rate_limit: str | None = None,
        breaker: Breaker | None = None,
    ) -> Callable[[HandlerFn], HandlerFn]:
        """Register ``fn(ctx, payload)`` (async or plain) under ``name``.

        ``tags``: only workers with all of them run it. ``concurrency_limit``: at most
        this many of its runs run at once, cluster-wide (``singleton=True``: one).
        ``key_limit``: the default cap for runs enqueued with a ``concurrency_key``.
        ``rate_limit``: at most this many starts per period cluster-wide, e.g.
        ``"100/minute"`` (``/second``, ``/hour``), counted per ``rate_key``.
        ``breaker``: a cluster-wide :class:`rota.Breaker` (per ``breaker_key``)."""

        def register(fn: HandlerFn) -> HandlerFn:
            spec = make_spec(
                fn,
                name or str(getattr(fn, "__name__", "")),
                queue=queue,
                max_attempts=max_attempts,
                timeout=timeout,
                retry=retry,
                priority=priority,
                retry_timeouts=retry_timeouts,
                tags=tuple(tags),
                concurrency_limit=concurrency_limit,
                singleton=singleton,
                key_limit=key_limit,
                rate_limit=rate_limit,
                breaker=breaker,
            )
            self.registry.register(spec)
            return fn

        return register
