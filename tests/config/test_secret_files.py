"""``ROTA_<SECRET>_FILE``: a secret read from a file (Docker and Kubernetes secrets),
its trailing newline dropped; a variable and its _FILE both set is an error naming
both; an unreadable file is one line; the secret never appears in a message."""

from __future__ import annotations

from pathlib import Path

import pytest

from rota.api.settings import ApiSettings
from rota.config import Settings
from rota.config.secret_files import with_secret_files
from rota.config.sources import Sources
from rota.errors import RotaError
from rota.redact import Secret

pytestmark = pytest.mark.timeout(30)
KEY = "s3cret-signing-key-abcdefghijklmnopqrstuvwxyz-0123"


def secret(tmp_path: Path, value: str, name: str = "secret") -> str:
    path = tmp_path / name
    path.write_text(value)
    return str(path)


def test_the_jwt_secret_from_a_file(tmp_path: Path) -> None:
    settings = ApiSettings.from_env({"ROTA_JWT_SECRET_FILE": secret(tmp_path, KEY + "\n")})
    assert settings.signing_key == Secret(KEY)


def test_the_metrics_token_from_a_file(tmp_path: Path) -> None:
    token = "metrics-token-abcdefghijklmnopqrstuvwxyz-0123456789"
    settings = ApiSettings.from_env({"ROTA_METRICS_TOKEN_FILE": secret(tmp_path, token + "\n")})
    assert settings.metrics_token == Secret(token)


def test_the_database_url_from_a_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'x.db'}"
    settings = Settings.from_env({"ROTA_DATABASE_URL_FILE": secret(tmp_path, url + "\n")})
    assert settings.database_url == url


def test_a_database_password_is_spliced_into_the_url(tmp_path: Path) -> None:
    environ = {
        "ROTA_DATABASE_URL": "postgresql://rota@db:5432/rota",
        "ROTA_DATABASE_PASSWORD_FILE": secret(tmp_path, "p@ss word\n"),
    }
    settings = Settings.from_env(environ)
    assert settings.database_url == "postgresql://rota:p%40ss%20word@db:5432/rota"
    assert "p%40ss" not in repr(settings)


def test_a_password_in_the_url_and_beside_it_is_refused(tmp_path: Path) -> None:
    environ = {
        "ROTA_DATABASE_URL": "postgresql://rota:first-pw@db/rota",
        "ROTA_DATABASE_PASSWORD": "second-pw",
    }
    with pytest.raises(RotaError) as caught:
        Settings.from_env(environ)
    assert "first-pw" not in str(caught.value)
    assert "second-pw" not in str(caught.value)


def test_both_the_variable_and_its_file_is_an_error_naming_both(tmp_path: Path) -> None:
    environ = {"ROTA_JWT_SECRET": KEY, "ROTA_JWT_SECRET_FILE": secret(tmp_path, KEY)}
    with pytest.raises(RotaError) as caught:
        with_secret_files(environ)
    assert "ROTA_JWT_SECRET and ROTA_JWT_SECRET_FILE are both set" in str(caught.value)
    assert KEY not in str(caught.value)


def test_an_unreadable_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(RotaError) as caught:
        with_secret_files({"ROTA_TOKEN_FILE": str(tmp_path / "missing")})
    assert str(caught.value).startswith("ROTA_TOKEN_FILE=")
    assert "cannot be read" in str(caught.value)


def test_only_secrets_are_read_from_files(tmp_path: Path) -> None:
    """ROTA_CA_FILE names a file and is no secret: it is not read as ROTA_CA."""
    environ = {"ROTA_CA_FILE": secret(tmp_path, "-----BEGIN CERTIFICATE-----")}
    assert "ROTA_CA" not in with_secret_files(environ)


def test_config_show_says_the_secret_came_from_a_file(tmp_path: Path) -> None:
    found = Sources.read({"ROTA_JWT_SECRET_FILE": secret(tmp_path, KEY)})
    assert found.origin("auth.jwt_secret") == "env ROTA_JWT_SECRET_FILE"
