"""rota.yaml: every setting grouped, checked by the kinds the variables use, beneath the
environment and the flags; a bad key, kind or range is one line naming the key as
written in the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from rota.api.settings import ApiSettings
from rota.config import Settings
from rota.config import file as config_file
from rota.config.kinds import KINDS
from rota.config.schema import ENTRIES, for_target
from rota.config.sources import Sources
from rota.errors import InvalidArgument, RotaError

pytestmark = pytest.mark.timeout(30)


def write(tmp_path: Path, text: str, name: str = "rota.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_every_setting_has_one_key() -> None:
    keys = [entry.key for entry in ENTRIES]
    assert len(keys) == len(set(keys))
    assert {e.field for e in for_target("settings")} == {
        *KINDS,
        "database_url",
        "database_password",
    }
    api_fields = set(ApiSettings.__dataclass_fields__) - {"node_id"}  # worker.node_id
    assert {e.field for e in for_target("api")} == api_fields


def test_the_file_sits_beneath_the_environment_and_overrides(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "database:\n  url: sqlite:///from-file.db\n"
        "worker:\n  lease_seconds: 12\n  poll_seconds: 0.5\n"
        "retention:\n  runs_seconds: 3600\n",
    )
    environ = {"ROTA_CONFIG": str(path), "ROTA_POLL_SECONDS": "0.25"}
    settings = Settings.from_env(environ, retention_seconds=60.0)
    assert settings.database_url == "sqlite:///from-file.db"  # file
    assert settings.lease_seconds == 12.0  # file (30 means 30.0 seconds)
    assert settings.poll_seconds == 0.25  # environment over file
    assert settings.retention_seconds == 60.0  # override (a flag) over both
    assert settings.aging_seconds == 60.0  # default


def test_api_settings_read_the_file(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "server:\n  env: test\n  trusted_proxies: [10.0.0.0/8]\n  rate_burst: 7\n"
        "auth:\n  leeway_seconds: 5\n",
    )
    settings = ApiSettings.from_env({"ROTA_CONFIG": str(path), "ROTA_API_RATE_BURST": "9"})
    assert settings.env == "test"
    assert settings.trusted_proxies == ("10.0.0.0/8",)
    assert settings.rate_burst == 9
    assert settings.leeway_seconds == 5.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("worker:\n  concurency: 3\n", "invalid key in rota.yaml: 'worker.concurency'; expected"),
        ("wrker:\n  concurrency: 3\n", "invalid key in rota.yaml: 'wrker'; expected one of the"),
        ("worker:\n  concurrency: many\n", "invalid worker.concurrency in rota.yaml: 'many'"),
        ("worker:\n  concurrency: 0\n", "worker.concurrency in rota.yaml: 0; expected an integer"),
        ("worker:\n  lease_seconds: -1\n", "worker.lease_seconds in rota.yaml: -1; expected"),
        ("server:\n  port: 70000\n", "server.port in rota.yaml: 70000; expected a port"),
        ("server:\n  env: staging\n", "server.env in rota.yaml: 'staging'; expected one of"),
        ("database:\n  auto_migrate: maybe\n", "database.auto_migrate in rota.yaml: 'maybe'"),
        ("worker: 3\n", "invalid worker in rota.yaml: 3; expected a mapping"),
        ("- a\n- b\n", "rota.yaml must hold a mapping of groups"),
        ("worker: [\n", "rota.yaml is not valid YAML"),
    ],
)
def test_a_bad_file_is_one_line_naming_the_key(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(RotaError) as caught:
        config_file.load(write(tmp_path, text))
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_secret_in_the_file_is_never_echoed(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument) as caught:
        config_file.load(write(tmp_path, "auth:\n  jwt_secret: 12345\n"))
    assert "12345" not in str(caught.value)
    assert "auth.jwt_secret" in str(caught.value)


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("auth:\n  jwt_secret: 'not-for-your-eyes\n  x: [1,\n", "rota.yaml"),
        ('[auth]\njwt_secret = "not-for-your-eyes\n', "rota.toml"),
    ],
)
def test_a_file_that_does_not_parse_never_echoes_its_text(
    tmp_path: Path, text: str, name: str
) -> None:
    """The parser's error says where, not what the line held: it may be a secret."""
    with pytest.raises(RotaError) as caught:
        config_file.load(write(tmp_path, text, name))
    assert "not-for-your-eyes" not in str(caught.value)
    assert "is not valid" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_toml_is_read_alike(tmp_path: Path) -> None:
    path = write(tmp_path, '[worker]\nconcurrency = 3\nqueues = ["a", "b"]\n', "rota.toml")
    assert config_file.load(path) == {"worker.concurrency": 3, "worker.queues": ["a", "b"]}


def test_an_empty_file_sets_nothing(tmp_path: Path) -> None:
    assert config_file.load(write(tmp_path, "")) == {}


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(RotaError, match="cannot be read"):
        Sources.read({"ROTA_CONFIG": str(tmp_path / "nope.yaml")})


def test_origins(tmp_path: Path) -> None:
    path = write(tmp_path, "worker:\n  concurrency: 3\n  loop: asyncio\n")
    found = Sources.read({"ROTA_CONFIG": str(path), "ROTA_LOOP": "uvloop"})
    assert found.origin("worker.concurrency") == f"file {path}"
    assert found.origin("worker.loop") == "env ROTA_LOOP"
    assert found.value("worker.loop") == "uvloop"
    assert found.origin("worker.loop", flag="auto") == "flag"
    assert found.origin("worker.tags") == "default"


def test_the_documented_table_is_current() -> None:
    from rota.cli import config_doc
    from tests.helpers import REPO

    documented = (REPO / "docs" / "configuration.md").read_text()
    assert config_doc.rewrite(documented) == documented, (
        "docs/configuration.md is stale: python -m rota.cli.config_doc docs/configuration.md"
    )
