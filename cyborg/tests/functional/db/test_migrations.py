"""Migrations on SQLite, MariaDB and PostgreSQL: they build exactly the models.

Each test class runs on one backend; MariaDB and PostgreSQL tests are skipped
when their server cannot be reached (failed under ``CI=true``). They run on
the fixture's default drivers, and once on the other driver of each server.
"""

import sqlalchemy as sa
from oslo_db.sqlalchemy import test_migrations

from cyborg.db import migration
from cyborg.db import models
from cyborg.tests import base
from cyborg.tests.fixtures import database


class MigrationsTestMixin:
    """Upgrade an empty database of ``backend`` and compare it with the models."""

    backend = None
    # The fixture's default driver of ``backend`` unless named.
    driver = None

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(
            database.Database(self.backend, schema=None, driver=self.driver))

    def test_empty_database_has_no_revision(self):
        self.assertIsNone(migration.current_revision(self.database.engine))

    def test_upgrade_from_empty_reaches_head(self):
        migration.upgrade('head', engine=self.database.engine)

        self.assertEqual(migration.head_revision(),
                         migration.current_revision(self.database.engine))
        tables = set(sa.inspect(self.database.engine).get_table_names())
        self.assertEqual(set(models.Base.metadata.tables) | {'alembic_version'},
                         tables)

    def test_default_engine_is_the_configured_one(self):
        # The fixture patches cyborg.db.api, so engine=None means this database.
        migration.upgrade()

        self.assertEqual(migration.head_revision(),
                         migration.current_revision())

    def test_upgrade_twice_is_harmless(self):
        migration.upgrade('head', engine=self.database.engine)
        migration.upgrade('head', engine=self.database.engine)

        self.assertEqual(migration.head_revision(),
                         migration.current_revision(self.database.engine))


class ModelsMigrationsSyncMixin(test_migrations.ModelsMigrationsSync):
    """oslo.db's comparison of the migrated schema with cyborg.db.models."""

    def db_sync(self, engine):
        migration.upgrade('head', engine=engine)

    def get_engine(self):
        return self.database.engine

    def get_metadata(self):
        return models.Base.metadata

    def include_object(self, object_, name, type_, reflected, compare_to):
        return not (type_ == 'table' and name == 'alembic_version')


class SQLiteMigrationsTest(MigrationsTestMixin, ModelsMigrationsSyncMixin,
                           base.TestCase):
    backend = 'sqlite'


class MySQLMigrationsTest(MigrationsTestMixin, ModelsMigrationsSyncMixin,
                          base.TestCase):
    backend = 'mysql'


class PostgreSQLMigrationsTest(MigrationsTestMixin, ModelsMigrationsSyncMixin,
                               base.TestCase):
    backend = 'postgresql'


# The other driver of each server (the suite runs on the production
# default): the migrations and the models' round trip on it.
class MySQLOtherDriverMigrationsTest(MigrationsTestMixin,
                                     ModelsMigrationsSyncMixin,
                                     base.TestCase):
    backend = 'mysql'
    driver = database.OTHER_DRIVERS['mysql']


class PostgreSQLOtherDriverMigrationsTest(MigrationsTestMixin,
                                          ModelsMigrationsSyncMixin,
                                          base.TestCase):
    backend = 'postgresql'
    driver = database.OTHER_DRIVERS['postgresql']
