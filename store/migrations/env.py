"""Alembic's environment: runs on the connection `store.db.Database.upgrade` hands it, or, from
the `alembic` command line, on `sqlalchemy.url`."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from store.tables import metadata

config = context.config


def _run(connection) -> None:
    # batch mode: SQLite cannot ALTER most things in place
    context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


connection = config.attributes.get("connection")
if connection is not None:
    _run(connection)
else:
    with create_engine(config.get_main_option("sqlalchemy.url") or "").begin() as conn:
        _run(conn)
