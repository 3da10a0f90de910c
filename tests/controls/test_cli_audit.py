"""Commands that change the database without the API write exactly one audit entry
each, naming the action and the OS user and host who ran it (never a secret or a
payload value); commands that only read write none. On both stores."""

from __future__ import annotations

import asyncio
import getpass
import socket

import pytest
from click.testing import CliRunner, Result

from rota.bootstrap import open_store
from rota.cli.main import main
from rota.cli.store_access import os_actor
from rota.config import Settings
from rota.domain.access import AuditEntry, AuditQuery
from rota.services.access import COMMAND_STATUS

from .test_breakers_cli import _trip

SECRET_VALUE = "s3cret-payload-value"


def _rota(db_url: str, *args: str) -> Result:
    result = CliRunner().invoke(main, [*args, "--db", db_url])
    assert result.exit_code == 0, result.output
    return result


async def _entries(db_url: str) -> list[AuditEntry]:
    store = await open_store(Settings(database_url=db_url))
    try:
        return await store.list_audit(AuditQuery(namespaces=None, before_id=None, limit=100))
    finally:
        await store.close()


def _audited(db_url: str, *args: str) -> AuditEntry:
    """Run the command; it must have added exactly one audit entry: that one."""
    before = {entry.id for entry in asyncio.run(_entries(db_url))}
    _rota(db_url, *args)
    added = [e for e in asyncio.run(_entries(db_url)) if e.id not in before]
    assert len(added) == 1, added
    [entry] = added
    assert entry.actor == os_actor()
    assert (entry.status, entry.correlation_id) == (COMMAND_STATUS, None)
    assert SECRET_VALUE not in repr(entry)
    return entry


def test_the_actor_is_the_os_user_at_the_host() -> None:
    assert os_actor() == f"os:{getpass.getuser()}@{socket.gethostname()}"


SET_CAP = ("limits", "set", "queue", "mail", "5")
SET_RATE = ("limits", "set", "handler", "c", "--rate", "9/minute")
SET_BOTH = ("limits", "set", "handler", "c", "2", "--rate", "9/minute")  # still one entry


@pytest.mark.parametrize(
    ("first", "args", "action", "target"),
    [
        ((), SET_CAP, "limits.set", "limit queue mail"),
        ((), SET_BOTH, "limits.set", "limit handler c"),
        (SET_CAP, ("limits", "clear", "queue", "mail"), "limits.clear", "limit queue mail"),
        (SET_RATE, ("limits", "clear", "handler", "c", "--rate"), "rates.clear", "rate handler c"),
        ((), ("db", "upgrade"), "db.upgrade", "schema"),
    ],
)  # fmt: skip
def test_each_change_writes_one_entry(
    db_url: str, first: tuple[str, ...], args: tuple[str, ...], action: str, target: str
) -> None:
    if first:
        _rota(db_url, *first)
    entry = _audited(db_url, *args)
    assert (entry.action, entry.target, entry.outcome) == (action, target, "ok")


def test_an_upgrade_says_what_it_applied(db_url: str) -> None:
    assert _audited(db_url, "db", "upgrade").detail == "already up to date"


def test_a_breaker_reset_writes_one_entry(db_url: str) -> None:
    asyncio.run(_trip(db_url))
    entry = _audited(db_url, "breakers", "reset", "charge", "--key", "psp.example")
    assert (entry.action, entry.target) == ("breakers.reset", "breaker charge psp.example")


def test_an_enqueue_writes_one_entry_without_the_payload(db_url: str) -> None:
    payload = f'{{"file": "{SECRET_VALUE}"}}'
    entry = _audited(db_url, "enqueue", "export-csv", payload, "--app", "rota.examples:app")
    assert (entry.action, entry.namespace) == ("runs.enqueue", "default")
    assert entry.target.startswith("run ")


def test_a_refused_change_writes_one_rejected_entry(db_url: str) -> None:
    before = len(asyncio.run(_entries(db_url)))
    result = CliRunner().invoke(main, ["breakers", "reset", "nope", "--db", db_url])
    assert result.exit_code != 0
    entries = asyncio.run(_entries(db_url))
    assert len(entries) == before + 1
    assert (entries[0].action, entries[0].outcome) == ("breakers.reset", "rejected")
    assert entries[0].detail == "InvalidArgument"  # the kind of error, never its text


def test_reading_writes_nothing(db_url: str) -> None:
    for args in (("limits", "list"), ("breakers", "list"), ("db", "status")):
        _rota(db_url, *args)
    assert asyncio.run(_entries(db_url)) == []
