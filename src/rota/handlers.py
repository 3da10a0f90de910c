"""The handler registry: what a worker may run, by name, with its options.

Only registered functions ever run: a run names a handler, never code.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rota.domain.breakers import Breaker
from rota.domain.rates import Rate
from rota.domain.retry import DEFAULT_POLICY, RetryPolicy
from rota.domain.runs import (
    check_name,
    check_positive_int,
    check_priority,
    check_tags,
    check_timeout,
)
from rota.errors import InvalidArgument, UnknownHandler

HandlerFn = Callable[..., Any]


@dataclass(frozen=True)
class HandlerSpec:
    name: str
    fn: HandlerFn
    is_async: bool
    queue: str = "default"
    max_attempts: int = 3
    timeout: float | None = None
    retry: RetryPolicy = DEFAULT_POLICY
    priority: int = 5
    # A timeout is usually transient (a slow dependency), so it is retried like any
    # failure; handlers for which a timeout means "give up" set this to False.
    retry_timeouts: bool = True
    tags: tuple[str, ...] = ()  # runs of this handler need workers with these tags
    concurrency_limit: int | None = None  # cluster-wide cap on its running runs
    key_limit: int = 1  # default cap per concurrency_key for its runs
    rate_limit: Rate | None = None  # cluster-wide cap on its starts (per rate_key)
    breaker: Breaker | None = None  # cluster-wide circuit breaker (per breaker_key)

    def __post_init__(self) -> None:
        """A spec is valid once built: registering a bad handler fails at import time,
        with the option named, not when its first run is enqueued or claimed."""
        check_name("handler name", self.name)
        check_name("queue", self.queue)
        check_positive_int("max_attempts", self.max_attempts)
        if not callable(self.fn):
            raise InvalidArgument("handler", self.fn, "a function taking (ctx, payload)")
        _check_signature(self.name, self.fn)
        object.__setattr__(self, "tags", check_tags(self.tags))
        if self.concurrency_limit is not None:
            check_positive_int("concurrency_limit", self.concurrency_limit)
        check_positive_int("key_limit", self.key_limit)
        if not callable(getattr(self.retry, "delay", None)):
            raise InvalidArgument(
                "retry", self.retry, "a policy from rota.retry (Fixed, Exponential, ...)"
            )
        object.__setattr__(self, "timeout", check_timeout(self.timeout))
        check_priority(self.priority)


class Registry:
    def __init__(self) -> None:
        self._specs: dict[str, HandlerSpec] = {}

    def register(self, spec: HandlerSpec) -> None:
        if spec.name in self._specs:
            raise InvalidArgument("handler", spec.name, "a name not already registered")
        self._specs[spec.name] = spec

    def get(self, name: str) -> HandlerSpec | None:
        return self._specs.get(name)

    def require(self, name: str) -> HandlerSpec:
        spec = self._specs.get(name)
        if spec is None:
            raise UnknownHandler(name, list(self._specs))
        return spec

    def names(self) -> list[str]:
        return sorted(self._specs)

    def specs(self) -> list[HandlerSpec]:
        return [self._specs[name] for name in sorted(self._specs)]

    def queues(self) -> tuple[str, ...]:
        return tuple(sorted({spec.queue for spec in self._specs.values()})) or ("default",)


def make_spec(
    fn: HandlerFn,
    name: str,
    *,
    queue: str,
    max_attempts: int,
    timeout: float | None,
    retry: RetryPolicy | None,
    priority: int,
    retry_timeouts: bool,
    tags: tuple[str, ...] = (),
    concurrency_limit: int | None = None,
    singleton: bool = False,
    key_limit: int = 1,
    rate_limit: str | None = None,
    breaker: Breaker | None = None,
) -> HandlerSpec:
    """The spec of ``fn`` with the defaults filled in (HandlerSpec validates it)."""
    if singleton:
        if concurrency_limit not in (None, 1):
            raise InvalidArgument(
                "concurrency_limit", concurrency_limit, "1 or unset for a singleton handler"
            )
        concurrency_limit = 1
    return HandlerSpec(
        name=name,
        fn=fn,
        is_async=inspect.iscoroutinefunction(fn),
        queue=queue,
        max_attempts=max_attempts,
        timeout=timeout,
        retry=DEFAULT_POLICY if retry is None else retry,
        priority=priority,
        retry_timeouts=retry_timeouts,
        tags=tags,
        concurrency_limit=concurrency_limit,
        key_limit=key_limit,
        rate_limit=None if rate_limit is None else Rate.parse(rate_limit),
        breaker=breaker,
    )


def _check_signature(name: str, fn: HandlerFn) -> None:
    try:
        inspect.signature(fn).bind(object(), object())
    except TypeError:
        raise InvalidArgument(
            f"handler {name!r}", fn, "a function accepting two arguments: (ctx, payload)"
        ) from None
    except ValueError:  # builtins without a signature: let them be
        return
