"""``rota limits ...`` and ``rota breakers ...``: the cluster's caps, rates and circuit
breakers, read and changed in the database directly (each change writes one audit
entry, actor ``os:<user>@<host>``)."""

from __future__ import annotations

import click
from rich.table import Table

from rota.cli.errors import fail
from rota.cli.output import console
from rota.cli.store_access import db_option, run, settings_for, with_audited_store, with_store
from rota.clock import SystemClock
from rota.services import controls as control_service
from rota.store.port import Store


@click.group()
def limits() -> None:
    """Cluster-wide caps on running runs (global, per queue, per handler)."""


@limits.command("set")
@click.argument("scope", type=click.Choice(["global", "queue", "handler"]))
@click.argument("name")
@click.argument("max_running", type=int, required=False)
@click.option("--rate", help="At most this many starts per period, e.g. 100/minute.")
@db_option
def set_limit(
    scope: str, name: str, max_running: int | None, rate: str | None, db: str | None
) -> None:
    """At most MAX_RUNNING runs of SCOPE NAME at once (global takes NAME '*'), and/or
    at most --rate starts (queue and handler scopes, counted per rate_key)."""
    if max_running is None and rate is None:
        fail("give MAX_RUNNING, --rate, or both")

    async def change(store: Store) -> list[str]:
        said = []
        if max_running is not None:
            limit = await control_service.set_limit(store, scope, name, max_running)
            said.append(f"{limit.scope.value} {limit.name}: at most {limit.max_running} running")
        if rate is not None:
            set_rate = await control_service.set_rate(store, scope, name, rate)
            said.append(f"{set_rate.scope.value} {set_rate.name}: at most {set_rate.rate} starts")
        return said

    target = f"limit {scope} {name}"
    for line in run(lambda: with_audited_store(settings_for(db), "limits.set", target, change)):
        click.echo(line)


@limits.command("clear")
@click.argument("scope", type=click.Choice(["global", "queue", "handler"]))
@click.argument("name")
@click.option("--rate", "rate_only", is_flag=True, help="Clear the rate, not the cap.")
@db_option
def clear_limit(scope: str, name: str, rate_only: bool, db: str | None) -> None:
    """Remove a cap (or, with --rate, a rate)."""
    clear = control_service.clear_rate if rate_only else control_service.clear_limit
    action = "rates.clear" if rate_only else "limits.clear"
    target = f"{'rate' if rate_only else 'limit'} {scope} {name}"
    run(
        lambda: with_audited_store(
            settings_for(db), action, target, lambda s: clear(s, scope, name)
        )
    )
    click.echo(f"{scope} {name}: no {'rate' if rate_only else 'limit'}")


@limits.command("list")
@db_option
def list_limits(db: str | None) -> None:
    """Every cap and rate in force."""
    found = run(lambda: with_store(settings_for(db), control_service.list_limits))
    rates = run(lambda: with_store(settings_for(db), control_service.list_rates))
    table = Table("scope", "name", "max running", "rate")
    for limit in found:
        table.add_row(limit.scope.value, limit.name, str(limit.max_running), "")
    for rate in rates:
        table.add_row(rate.scope.value, rate.name, "", str(rate.rate))
    console.print(table)


@click.group()
def breakers() -> None:
    """Cluster-wide circuit breakers (declared with @app.handler(breaker=...))."""


@breakers.command("list")
@click.option(
    "--namespace",
    "namespaces",
    multiple=True,
    help="Only the breakers runs of this namespace moved (repeatable; default: all).",
)
@db_option
def list_breakers(namespaces: tuple[str, ...], db: str | None) -> None:
    """Every breaker: its state, failures in a row, the current failure-rate window's
    outcomes (failed / all), and the cause of its last change."""
    clock = SystemClock()
    reach = namespaces or None
    found = run(
        lambda: with_store(
            settings_for(db), lambda s: control_service.list_breakers(s, clock, reach)
        )
    )
    table = Table("handler", "key", "state", "failures", "window", "probes left", "cause")
    for b in found:
        window = f"{b.window_failures}/{b.window_calls}" if b.window_started_at else "-"
        state, probes = b.state.value, str(b.probes_left)
        table.add_row(b.handler, b.key, state, str(b.failures), window, probes, b.cause or "")
    console.print(table)


@breakers.command("reset")
@click.argument("handler")
@click.option("--key", default="", help="The breaker_key (default: runs without one).")
@db_option
def reset_breaker(handler: str, key: str, db: str | None) -> None:
    """Close a breaker now (recorded as a transition)."""
    clock = SystemClock()
    run(
        lambda: with_audited_store(
            settings_for(db),
            "breakers.reset",
            f"breaker {handler} {key}".rstrip(),
            lambda s: control_service.reset_breaker(s, clock, handler, key),
        )
    )
    click.echo(f"{handler} {key or '(no key)'}: closed")
