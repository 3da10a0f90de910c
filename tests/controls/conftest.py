from tests.engine.conftest import clock, make_app  # noqa: F401  (shared fixtures)
