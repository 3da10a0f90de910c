"""Every bad setting is one line naming the setting, the value and what is allowed:
from ``ROTA_*`` variables and from code alike, never a traceback; ``Settings()`` and
``Settings.from_env()`` read the environment the same way."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

import rota
from rota.config import from_environment
from rota.config.kinds import KINDS, SWITCH
from rota.errors import InvalidArgument

pytestmark = pytest.mark.timeout(120)

NAMES = [f.name for f in fields(rota.Settings)]
RANGED = [name for name, kind in KINDS.items() if kind.minimum is not None]


def test_every_setting_has_a_kind():
    assert set(NAMES) == {"database_url", *KINDS}


@pytest.mark.parametrize("name", NAMES)
def test_a_wrong_type_from_the_environment_is_named(name: str):
    variable = f"ROTA_{name.upper()}"
    with pytest.raises(InvalidArgument) as caught:
        from_environment({variable: "abc"})
    message = str(caught.value)
    assert len(message.splitlines()) == 1
    if name == "database_url":
        assert message.startswith("invalid database URL: 'abc'; expected sqlite:///PATH")
    else:
        assert message == f"invalid {variable}: 'abc'; expected {KINDS[name].allowed}"


@pytest.mark.parametrize("name", RANGED)
def test_an_out_of_range_value_is_named(name: str):
    variable = f"ROTA_{name.upper()}"
    below = str(KINDS[name].minimum - 1 if KINDS[name].minimum else -1)  # type: ignore[operator]
    with pytest.raises(InvalidArgument, match=f"^invalid {variable}: '{below}'; expected "):
        from_environment({variable: below})
    with pytest.raises(InvalidArgument, match=f"^invalid {name}: "):
        rota.Settings(**{name: float(below)})  # from code: the field's name
    for not_a_number in ("nan", "inf"):
        with pytest.raises(InvalidArgument):
            from_environment({variable: not_a_number})


@pytest.mark.parametrize("name", [n for n, kind in KINDS.items() if kind is SWITCH])
def test_switches_read_the_usual_words(name: str):
    variable = f"ROTA_{name.upper()}"
    assert from_environment({variable: "on"})[name] is True
    assert from_environment({variable: "No"})[name] is False


def test_settings_and_from_env_agree(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ROTA_LEASE_SECONDS", "12")
    monkeypatch.setenv("ROTA_AUTO_MIGRATE", "off")
    monkeypatch.setenv("ROTA_DATABASE_URL", "sqlite:///from-env.db")
    assert rota.Settings() == rota.Settings.from_env()
    assert rota.Settings().lease_seconds == 12.0
    assert rota.Settings().auto_migrate is False
    assert rota.Settings(lease_seconds=6).lease_seconds == 6  # given wins
    assert rota.Settings.from_env(lease_seconds=6).lease_seconds == 6
    assert rota.Settings.from_env({}) == rota.Settings.from_env({}, database_url=None)
    assert rota.Settings.from_env({}).lease_seconds == 30.0  # a mapping stands for it all
    monkeypatch.setenv("ROTA_POOL_SIZE", "many")
    with pytest.raises(InvalidArgument, match="ROTA_POOL_SIZE"):
        rota.Settings()


@pytest.mark.parametrize(
    ("variable", "value", "allowed"),
    [
        ("ROTA_LEASE_SECONDS", "abc", "a number of seconds > 0"),
        ("ROTA_POISON_AFTER", "0", "an integer >= 1"),
        ("ROTA_AUTO_MIGRATE", "maybe", "true or false"),
    ],
)
def test_the_cli_says_it_in_one_line(tmp_path: Path, variable: str, value: str, allowed: str):
    (tmp_path / "tasks.py").write_text("import rota\napp = rota.App()\n")
    for command in (["worker", "--app", "tasks:app"], ["db", "upgrade"]):
        result = subprocess.run(
            [sys.executable, "-c", "from rota.cli.main import main; main()", *command],
            cwd=tmp_path,
            env={"PATH": "/usr/bin:/bin", variable: value},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 2, result
        assert result.stderr.splitlines() == [
            f"rota: error: invalid {variable}: {value!r}; expected {allowed}"
            + ("" if allowed != "true or false" else " (also 1/0, yes/no, on/off)")
        ]


@pytest.mark.parametrize(
    "flags",
    [
        ["worker", "--app", "tasks:app", "--concurrency", "abc"],
        ["worker", "--app", "tasks:app", "--concurrency", "0"],
        ["worker", "--app", "tasks:app", "--loop", "trio"],
        ["server", "--port", "99999"],
        ["--log-level", "loud", "worker"],
    ],
)
def test_a_bad_flag_is_one_line(tmp_path: Path, flags: list[str]):
    (tmp_path / "tasks.py").write_text("import rota\napp = rota.App()\n")
    result = subprocess.run(
        [sys.executable, "-c", "from rota.cli.main import main; main()", *flags],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert line.startswith("rota: error: ")
    assert flags[-1] in line or flags[-2].strip("-") in line
