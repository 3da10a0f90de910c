"""The ``rota`` command: the group, its own options, and every command group wired in
(each in its own module). Arguments -> settings -> bootstrap; no business rules here."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click
from click.exceptions import NoArgsIsHelpError

from rota import logs
from rota.cli.backfill import backfill
from rota.cli.bulk import bulk
from rota.cli.config import config, sources
from rota.cli.controls import breakers, limits
from rota.cli.cron import cron
from rota.cli.db import db
from rota.cli.dlq import dlq
from rota.cli.enqueue import enqueue
from rota.cli.events import events
from rota.cli.jobs import jobs
from rota.cli.queues import queues
from rota.cli.runs import runs
from rota.cli.server import server
from rota.cli.tokens import token
from rota.cli.webhooks import webhooks
from rota.cli.worker import worker
from rota.cli.workers import workers
from rota.cli.workflows import workflows
from rota.config.sources import CONFIG_VARIABLE


class _OneLineError(click.ClickException):
    """A usage error (a bad flag value, a missing option) as one line, like every other
    error of the CLI, instead of click's usage block."""

    exit_code = click.UsageError.exit_code  # 2, as click's own usage errors

    def show(self, file: Any = None) -> None:
        click.echo(f"rota: error: {self.format_message()}", err=True)


class _Rota(click.Group):
    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        with _one_line():  # the group's own options (--log-level)
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: click.Context) -> Any:
        with _one_line():  # every subcommand's arguments
            return super().invoke(ctx)


@contextmanager
def _one_line() -> Iterator[None]:
    try:
        yield
    except (_OneLineError, NoArgsIsHelpError):
        raise
    except click.UsageError as exc:
        raise _OneLineError(exc.format_message()) from None


@click.group(cls=_Rota)
@click.option("--log-level", default="info", type=click.Choice(logs.LEVELS))
@click.option("--log-json", is_flag=True, help="One JSON object per log line.")
@click.option(
    "--config",
    "config_path",
    default=None,
    metavar="PATH",
    help="Settings file, rota.yaml or rota.toml (as ROTA_CONFIG; flags and ROTA_* win).",
)
@click.option(
    "--ca-file",
    default=None,
    metavar="PATH",
    help="Verify the server's TLS certificate against this CA (as ROTA_CA_FILE).",
)
@click.version_option(package_name="rota")
def main(log_level: str, log_json: bool, config_path: str | None, ca_file: str | None) -> None:
    """rota: a distributed job scheduler."""
    logs.configure(log_level, log_json)
    # The flags stand for their variables, set for this process: the App a user's
    # module builds at import (rota.App() -> Settings.from_env) reads the same file as
    # the command does, without a second way to hand it over.
    if config_path is not None:
        os.environ[CONFIG_VARIABLE] = config_path
    if ca_file is not None:
        os.environ["ROTA_CA_FILE"] = ca_file
    if os.environ.get(CONFIG_VARIABLE):
        sources()  # a bad file stops every command before it starts, in one line


# In the database directly (--db): the worker, one enqueue, the schema, the controls.
for _command in (worker, enqueue, db, limits, breakers):
    main.add_command(_command)
# Through the HTTP API (--url, --token): rota.cli.api_client.
for _command in (jobs, runs, dlq, workers, queues, token, webhooks, events, workflows):
    main.add_command(_command)
jobs.add_command(backfill)
runs.add_command(bulk)
# A job with a trigger is a schedule: `rota schedules list|pause|resume|...` is the same
# group under the name operators look for first.
main.add_command(jobs, name="schedules")
# Neither: the server itself, the settings, cron previews.
for _command in (server, config, cron):
    main.add_command(_command)


if __name__ == "__main__":  # pragma: no cover
    main()
