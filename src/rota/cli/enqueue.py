"""``rota enqueue HANDLER PAYLOAD --app ...``: one run, straight into the database, and
one audit entry saying so (actor ``os:<user>@<host>``; never the payload)."""

from __future__ import annotations

import click

from rota.cli.app_loader import app_dir_option, load_app
from rota.cli.errors import fail, json_arg
from rota.cli.store_access import audit_command, db_option, run, with_store
from rota.domain.labels import parse_labels
from rota.errors import RotaError, StoreUnavailable
from rota.store.port import Store


@click.command()
@click.argument("handler")
@click.argument("payload", default="null")
@click.option("--app", "app_target", required=True, help="MODULE:ATTRIBUTE of your rota.App.")
@app_dir_option
@db_option
@click.option("--priority", type=int, default=None)
@click.option("--idempotency-key", default=None)
@click.option("--owner", default=None, help="Who the run belongs to (a team).")
@click.option("--label", "labels", multiple=True, help="key=value; repeat for several.")
def enqueue(
    handler: str,
    payload: str,
    app_target: str,
    app_dir: str,
    db: str | None,
    priority: int | None,
    idempotency_key: str | None,
    owner: str | None,
    labels: tuple[str, ...],
) -> None:
    """Enqueue one run of HANDLER with a JSON PAYLOAD."""
    app = load_app(app_target, app_dir)
    if db:
        app.settings = app.settings.with_overrides(database_url=db)
    value = json_arg("payload", payload)
    try:
        run_id = app.enqueue(
            handler,
            value,
            priority=priority,
            idempotency_key=idempotency_key,
            owner=owner,
            labels=dict(parse_labels(labels)),
        )
    except StoreUnavailable as exc:
        fail(str(exc), code=3)
    except RotaError as exc:
        fail(str(exc))
    finally:
        app.close()

    async def audit(store: Store) -> None:
        found = await store.get_run(run_id)
        namespace = found.namespace if found is not None else None
        await audit_command(store, "runs.enqueue", f"run {run_id}", namespace)

    run(lambda: with_store(app.settings, audit))
    click.echo(run_id)
