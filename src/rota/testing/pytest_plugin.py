"""rota's pytest plugin (the ``pytest11`` entry point ``rota``): fixtures for testing
code that uses rota.

``rota_app``: a fresh App on a SQLite file in the test's temporary folder, on the
``rota_clock`` FakeClock, closed at teardown. With the ini option ``rota_app`` set to
``module:attribute`` (your App), it has that App's handlers::

    [tool.pytest.ini_options]
    rota_app = "myproject.tasks:app"
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from rota.app import App
from rota.clock import FakeClock
from rota.errors import InvalidArgument
from rota.testing.apps import isolated_app

INI_OPTION = "rota_app"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        INI_OPTION,
        "module:attribute of the rota.App whose handlers the rota_app fixture has",
        default="",
    )


@pytest.fixture
def rota_clock() -> FakeClock:
    """The clock of ``rota_app``: it moves only when the test says (``advance``)."""
    return FakeClock()


@pytest.fixture
def rota_app(
    request: pytest.FixtureRequest, tmp_path: Path, rota_clock: FakeClock
) -> Iterator[App]:
    """A fresh App on its own SQLite file, closed when the test ends."""
    source = _configured_app(str(request.config.getini(INI_OPTION)))
    app = isolated_app(
        f"sqlite:///{tmp_path / 'rota-test.db'}", handlers_from=source, clock=rota_clock
    )
    try:
        yield app
    finally:
        app.close()


def _configured_app(spec: str) -> App | None:
    if not spec:
        return None
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise InvalidArgument(INI_OPTION, spec, "module:attribute naming a rota.App")
    found = getattr(importlib.import_module(module_name), attribute, None)
    if not isinstance(found, App):
        raise InvalidArgument(INI_OPTION, spec, "module:attribute naming a rota.App")
    return found
