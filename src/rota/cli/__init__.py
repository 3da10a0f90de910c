"""The ``rota`` command, one module per command group."""

from rota.cli.main import main

__all__ = ["main"]
