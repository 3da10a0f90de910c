"""Testing helpers for rota users, as structlog and Celery ship theirs.

* :func:`drain` runs every due run of an App to completion in the test's process, on
  the App's real store (SQLite in a temporary file is the usual choice), one at a time,
  and returns how each attempt ended.
* :func:`call` calls one handler directly, with a test context.
* :func:`assert_enqueued` / :func:`assert_not_enqueued` check what was enqueued and,
  when it fails, list what was enqueued instead.
* :class:`FakeClock` (rota's own clock abstraction) moves schedules and retries:
  ``clock.advance(minutes=5)`` then ``drain(app)``.
* The pytest plugin (``rota.testing.pytest_plugin``, loaded by installing rota) gives
  the fixtures ``rota_app`` (a fresh App on a temporary SQLite file, closed at
  teardown) and ``rota_clock`` (its FakeClock).
"""

from rota.clock import FakeClock
from rota.testing.apps import isolated_app
from rota.testing.assertions import assert_enqueued, assert_not_enqueued, enqueued
from rota.testing.drain import Drained, drain, drain_async
from rota.testing.inline import call, call_async, inline_context

__all__ = [
    "Drained",
    "FakeClock",
    "assert_enqueued",
    "assert_not_enqueued",
    "call",
    "call_async",
    "drain",
    "drain_async",
    "enqueued",
    "inline_context",
    "isolated_app",
]
