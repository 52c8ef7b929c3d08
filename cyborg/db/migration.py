"""Schema migrations: alembic, configured in code, driven by cyborg-dbsync.

The scripts live in ``cyborg/db/migrations`` inside the package, so the same
code works from a checkout and from an installed wheel; no alembic.ini.
"""

import os

from alembic import command
from alembic import config as alembic_config
from alembic import migration as alembic_migration
from alembic import script as alembic_script

from cyborg.db import api as db_api

MIGRATIONS_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                               'migrations')


def _config(connection=None):
    config = alembic_config.Config()
    # The value goes through ConfigParser interpolation: escape any '%'.
    config.set_main_option('script_location',
                           MIGRATIONS_PATH.replace('%', '%%'))
    # env.py runs on this connection instead of opening its own.
    config.attributes['connection'] = connection
    return config


def upgrade(revision='head', engine=None):
    """Upgrade the schema of ``engine`` (default: the configured database)."""
    engine = engine if engine is not None else db_api.get_engine()
    with engine.connect() as connection:
        command.upgrade(_config(connection), revision)


def current_revision(engine=None):
    """The revision the database is at, or None for an empty database."""
    engine = engine if engine is not None else db_api.get_engine()
    with engine.connect() as connection:
        context = alembic_migration.MigrationContext.configure(connection)
        return context.get_current_revision()


def head_revision():
    """The newest revision this code ships."""
    scripts = alembic_script.ScriptDirectory.from_config(_config())
    return scripts.get_current_head()
