"""Safe unless told otherwise: production is the default, development mode is asked for
and stays on loopback, weak signing keys are refused without being echoed, and the
public development key is announced in the log."""

from __future__ import annotations

import pytest
import structlog

import rota
from rota.api.settings import DEV_SIGNING_KEY, ApiSettings, InsecureConfiguration
from rota.asgi import create_api
from rota.redact import Secret

from .conftest import SIGNING_KEY, api_settings


def test_production_is_the_default() -> None:
    assert ApiSettings().production
    assert ApiSettings.from_env({}).production
    assert not ApiSettings().dev_tokens
    assert ApiSettings.from_env({"ROTA_ENV": "development"}).dev_tokens
    with pytest.raises(InsecureConfiguration, match="needs a signing key"):
        ApiSettings().check_startable()


@pytest.mark.parametrize(
    "weak",
    [" " * 32, " " * 64, "x" * 32, "x" * 100, "ab" * 32, "abcdefghi" * 4, "short"],
    ids=["32 spaces", "64 spaces", "32 x", "100 x", "abab", "9 letters repeated", "short"],
)
def test_a_weak_signing_key_is_refused_without_being_echoed(weak: str) -> None:
    with pytest.raises(InsecureConfiguration) as refused:
        ApiSettings(signing_key=weak)
    assert "ROTA_JWT_SECRET" in str(refused.value)
    if weak.strip():
        assert weak not in str(refused.value)
    with pytest.raises(InsecureConfiguration):
        ApiSettings.from_env({"ROTA_JWT_SECRET": weak})


def test_generated_keys_pass() -> None:
    import secrets

    for key in (secrets.token_urlsafe(32), secrets.token_hex(16), secrets.token_hex(32)):
        assert ApiSettings(signing_key=key).key == key


def test_the_signing_key_never_shows_in_a_repr() -> None:
    settings = ApiSettings(signing_key=SIGNING_KEY)
    assert SIGNING_KEY not in repr(settings)
    assert SIGNING_KEY not in str(settings)
    assert isinstance(settings.signing_key, Secret)
    assert settings.key == SIGNING_KEY
    assert SIGNING_KEY not in repr(ApiSettings.from_env({"ROTA_JWT_SECRET": SIGNING_KEY}))


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost", "127.0.0.2"])
def test_dev_mode_serves_loopback(host: str) -> None:
    ApiSettings(env="development").check_bind(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.1.2.3", "rota.example.com"])
def test_dev_mode_refuses_other_addresses(host: str) -> None:
    with pytest.raises(InsecureConfiguration, match="loopback only"):
        ApiSettings(env="development").check_bind(host)
    ApiSettings(signing_key=SIGNING_KEY).check_bind(host)  # production binds anywhere


def test_the_public_development_key_is_announced(rota_app: rota.App) -> None:
    with structlog.testing.capture_logs() as logs:
        create_api(rota_app, api_settings(env="development", signing_key=None))
    warnings = [e for e in logs if e["log_level"] == "warning"]
    assert ["public development key" in e["event"] for e in warnings] == [True]
    with structlog.testing.capture_logs() as logs:
        create_api(rota_app, api_settings(env="development", signing_key=DEV_SIGNING_KEY))
    assert any("public development key" in e["event"] for e in logs)
    with structlog.testing.capture_logs() as logs:
        create_api(rota_app, api_settings(env="development"))
    assert not any("public development key" in e["event"] for e in logs)


def test_dev_tokens_cannot_outlive_the_cap() -> None:
    from rota.errors import InvalidArgument

    with pytest.raises(InvalidArgument, match="max_token_lifetime_seconds"):
        ApiSettings(env="development", max_token_lifetime_seconds=600)


def test_an_issued_api_key_does_not_show_its_secret_in_a_repr() -> None:
    from rota.domain.access import issue_api_key

    issued = issue_api_key()
    assert issued.plaintext not in repr(issued)
    assert issued.plaintext[len("rota_") + 17 :] not in repr(issued)
