"""The ops tests share the engine tests' app factory and in-process worker."""

from __future__ import annotations

from tests.engine.conftest import clock, make_app

__all__ = ["clock", "make_app"]
