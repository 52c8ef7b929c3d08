"""Alembic environment: runs the revisions on the connection cyborg.db.migration passes.

Without a passed connection (plain ``alembic`` command line) it connects to
the database configured in ``[database] connection``.
"""

from alembic import context

from cyborg.db import api as db_api
from cyborg.db import models


def run_migrations(connection):
    """Run the pending revisions in one transaction where the backend allows."""
    context.configure(connection=connection,
                      target_metadata=models.Base.metadata,
                      render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


def main():
    """Use the caller's connection, or open one on the configured engine."""
    connection = context.config.attributes.get('connection')
    if connection is not None:
        run_migrations(connection)
        return
    with db_api.get_engine().connect() as connection:
        run_migrations(connection)


main()
