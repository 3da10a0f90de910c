"""What a caller may hand as ``connection=`` to ``enqueue`` and ``publish``, turned into
the psycopg connection the store's caller-connection port writes on.

A psycopg connection passes through. A SQLAlchemy ``Connection`` or ``Session`` (and
their async kinds) on PostgreSQL with the psycopg driver gives its own psycopg
connection, in the transaction it has open (a Session begins one if it had none), so
the run is committed or rolled back with the caller's ORM work. SQLAlchemy is imported
only when the object handed in is one of its own: it is not a dependency of rota.
"""

from __future__ import annotations

from typing import Any

from rota.errors import InvalidArgument

ALLOWED = "a psycopg connection, or a SQLAlchemy Connection/Session on postgresql+psycopg"


def _from_sqlalchemy(connection: Any) -> bool:
    return type(connection).__module__.partition(".")[0] == "sqlalchemy"


def driver_connection(connection: Any) -> Any:
    """The psycopg connection behind ``connection`` (sync code)."""
    if not _from_sqlalchemy(connection):
        return connection
    from sqlalchemy.engine import Connection
    from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession
    from sqlalchemy.orm import Session

    if isinstance(connection, AsyncConnection | AsyncSession):
        raise InvalidArgument(
            "connection", connection, f"{ALLOWED} (an async one goes to enqueue_async)"
        )
    if isinstance(connection, Session):
        connection = connection.connection()
    if not isinstance(connection, Connection):
        raise InvalidArgument("connection", connection, ALLOWED)
    _check_dialect(connection.dialect)
    if not connection.in_transaction():
        # As SQLAlchemy's own first execute would (autobegin): written on the driver
        # behind its back, the run would sit in a transaction that conn.commit() does
        # not know of, and is rolled back when the connection goes back to the pool.
        connection.begin()
    return connection.connection.driver_connection


async def async_driver_connection(connection: Any) -> Any:
    """The psycopg async connection behind ``connection`` (async code)."""
    if not _from_sqlalchemy(connection):
        return connection
    from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

    if isinstance(connection, AsyncSession):
        connection = await connection.connection()
    if not isinstance(connection, AsyncConnection):
        raise InvalidArgument("connection", connection, f"{ALLOWED} (a sync one goes to enqueue)")
    _check_dialect(connection.dialect)
    if not connection.in_transaction():
        await connection.begin()  # autobegin, as in driver_connection
    raw = await connection.get_raw_connection()
    return raw.driver_connection


def _check_dialect(dialect: Any) -> None:
    if (dialect.name, dialect.driver) != ("postgresql", "psycopg"):
        raise InvalidArgument(
            "connection", f"SQLAlchemy on {dialect.name}+{dialect.driver}", ALLOWED
        )
