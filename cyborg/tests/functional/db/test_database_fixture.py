"""The Database test fixture: isolation, clean-up, engine patching, skips."""

import os

import fixtures
import sqlalchemy as sa
import testtools
from oslo_db import exception as db_exception

from cyborg.db import api as db_api
from cyborg.db import migration
from cyborg.tests import base
from cyborg.tests.fixtures import database

CLOSED_PORT_URL = 'mysql+pymysql://root:secret@127.0.0.1:9/'


class BackendAvailableTest(base.TestCase):

    def setUp(self):
        super().setUp()
        # A fresh probe cache, and a MySQL URL nobody listens on.
        self.useFixture(fixtures.MonkeyPatch(
            'cyborg.tests.fixtures.database._server_reachable', {}))
        self.useFixture(fixtures.EnvironmentVariable(
            'CYBORG_TEST_MYSQL_URL', CLOSED_PORT_URL))

    def test_sqlite_is_always_available(self):
        self.assertTrue(database.backend_available('sqlite'))

    def test_unreachable_server_skips(self):
        self.useFixture(fixtures.EnvironmentVariable('CI'))

        error = self.assertRaises(testtools.TestCase.skipException,
                                  database.backend_available, 'mysql')
        self.assertIn('127.0.0.1:9', str(error))
        self.assertTrue(str(error).endswith(
            '); tools/start-services.sh starts it'), error)

    def test_unreachable_server_fails_under_ci_naming_it(self):
        self.useFixture(fixtures.EnvironmentVariable('CI', 'true'))

        error = self.assertRaises(RuntimeError, database.backend_available,
                                  'mysql')
        self.assertTrue(str(error).startswith(
            'MariaDB is not running at 127.0.0.1:9 (mysql+pymysql://'
            'root:***@127.0.0.1:9/; CYBORG_TEST_MYSQL_URL names another '
            'server; '), error)
        self.assertTrue(str(error).endswith(
            '); tools/start-services.sh starts it; CI=true, so this is an '
            'error'), error)
        self.assertNotIn('secret', str(error))

    def test_a_test_using_an_unreachable_backend_is_skipped_not_failed(self):
        self.useFixture(fixtures.EnvironmentVariable('CI'))

        class UsesMySQL(testtools.TestCase):
            def test_something(self):
                self.useFixture(database.Database('mysql'))

        result = testtools.TestResult()
        UsesMySQL('test_something').run(result)

        self.assertEqual([], result.errors + result.failures)
        self.assertEqual(1, sum(len(tests)
                                for tests in result.skip_reasons.values()))

    def test_unknown_backend_is_an_error(self):
        self.assertRaises(ValueError, database.backend_available, 'oracle')


class DatabaseFixtureTestMixin:

    backend = None

    def _server_databases(self):
        admin = sa.create_engine(database.server_url(self.backend),
                                 poolclass=sa.pool.NullPool)
        query = ('SHOW DATABASES' if self.backend == 'mysql'
                 else 'SELECT datname FROM pg_database')
        with admin.connect() as connection:
            names = set(connection.execute(sa.text(query)).scalars())
        admin.dispose()
        return names

    def test_each_fixture_gets_its_own_database_dropped_afterwards(self):
        first = database.Database(self.backend)
        second = database.Database(self.backend)
        first.setUp()
        try:
            second.setUp()
            try:
                self.assertNotEqual(first.url, second.url)
                self.assertIs(second.engine, db_api.get_engine())
            finally:
                second.cleanUp()
            # Cleaning up the inner fixture gives the outer one its engine back.
            self.assertIs(first.engine, db_api.get_engine())
            self.assertEqual(migration.head_revision(),
                             migration.current_revision())
        finally:
            first.cleanUp()

        if self.backend == 'sqlite':
            path = sa.engine.make_url(first.url).database
            self.assertFalse(os.path.exists(path))
        else:
            name = sa.engine.make_url(first.url).database
            self.assertNotIn(name, self._server_databases())

    def test_url_works_for_a_new_engine(self):
        fixture = self.useFixture(database.Database(self.backend))

        engine = sa.create_engine(fixture.url, poolclass=sa.pool.NullPool)
        try:
            self.assertEqual(migration.head_revision(),
                             migration.current_revision(engine))
        finally:
            engine.dispose()

    def test_schema_choices(self):
        models_fixture = self.useFixture(
            database.Database(self.backend, schema='models'))
        tables = set(sa.inspect(models_fixture.engine).get_table_names())
        empty = self.useFixture(database.Database(self.backend, schema=None))

        self.assertIn('devices', tables)
        self.assertNotIn('alembic_version', tables)
        self.assertEqual([], sa.inspect(empty.engine).get_table_names())

    def test_foreign_keys_are_enforced(self):
        fixture = self.useFixture(database.Database(self.backend))

        with fixture.engine.connect() as connection:
            self.assertRaises(
                db_exception.DBReferenceError, connection.execute, sa.text(
                    "INSERT INTO deployables (uuid, name, num_accelerators, "
                    "device_id, created_at) VALUES "
                    "('8d1e3a4c-7a45-4f55-9f57-1c0e9d0f6a11', 'x', 1, 42, "
                    "'2026-01-01 00:00:00')"))


class SQLiteDatabaseFixtureTest(DatabaseFixtureTestMixin, base.TestCase):
    backend = 'sqlite'


class MySQLDatabaseFixtureTest(DatabaseFixtureTestMixin, base.TestCase):
    backend = 'mysql'


class PostgreSQLDatabaseFixtureTest(DatabaseFixtureTestMixin, base.TestCase):
    backend = 'postgresql'
