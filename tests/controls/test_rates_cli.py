"""`rota limits set --rate` and friends, on both stores."""

from __future__ import annotations

from click.testing import CliRunner, Result

from rota.cli.main import main


def _rota(db_url: str, *args: str) -> Result:
    return CliRunner().invoke(main, [*args, "--db", db_url])


def test_a_rate_is_set_listed_and_cleared(db_url: str) -> None:
    done = _rota(db_url, "limits", "set", "handler", "charge", "--rate", "100/minute")
    assert done.exit_code == 0, done.output
    assert "handler charge: at most 100/minute starts" in done.output
    assert "100/minute" in _rota(db_url, "limits", "list").output
    cleared = _rota(db_url, "limits", "clear", "handler", "charge", "--rate")
    assert cleared.exit_code == 0, cleared.output
    assert "100/minute" not in _rota(db_url, "limits", "list").output


def test_a_bad_rate_is_refused_with_the_value_named(db_url: str) -> None:
    for bad in ("10/fortnight", "0/minute"):
        result = _rota(db_url, "limits", "set", "queue", "mail", "--rate", bad)
        assert result.exit_code != 0
        assert repr(bad) in result.output
    assert "mail" not in _rota(db_url, "limits", "list").output, "nothing written"
