"""Revision 007eb4efa142: strings compare exactly on every backend.

A database at the revision before it, holding a device profile ``Case``, is
upgraded to head; from then on case and trailing spaces count in unique
keys, filters and CHECK constraints, on MariaDB as on SQLite and PostgreSQL.
On MariaDB every string column of both the migrated and the created schema
has the binary NO PAD collation.
"""

import sqlalchemy as sa
from oslo_db import exception as db_exception

from cyborg.db import migration
from cyborg.db import models
from cyborg.tests import base
from cyborg.tests.fixtures import database

PREVIOUS = 'b5e1c7d3a9f2'
CREATED = '2026-03-01 08:30:00'
PROFILE_JSON = '[{"resources:FPGA": "1"}]'


def _insert_profile(connection, number, name):
    connection.execute(sa.text(
        'INSERT INTO device_profiles (uuid, name, profile_json, created_at) '
        'VALUES (:uuid, :name, :profile_json, :created_at)'),
        {'uuid': '5e6f7081-0000-4000-8000-%012d' % number, 'name': name,
         'profile_json': PROFILE_JSON, 'created_at': CREATED})


def _names_equal_to(connection, name):
    return connection.execute(sa.text(
        'SELECT name FROM device_profiles WHERE name = :name ORDER BY id'),
        {'name': name}).scalars().all()


class CollationMigrationTestMixin:

    backend = None

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(
            database.Database(self.backend, schema=None))
        self.engine = self.database.engine

    def _upgrade_with_profile_case(self):
        migration.upgrade(PREVIOUS, engine=self.engine)
        with self.engine.begin() as connection:
            _insert_profile(connection, 1, 'Case')
        migration.upgrade('head', engine=self.engine)

    def test_names_differing_in_case_are_distinct_after_upgrade(self):
        self._upgrade_with_profile_case()

        with self.engine.begin() as connection:
            _insert_profile(connection, 2, 'case')
        with self.engine.connect() as connection:
            self.assertEqual(['Case'], _names_equal_to(connection, 'Case'))
            self.assertEqual(['case'], _names_equal_to(connection, 'case'))
            self.assertEqual([], _names_equal_to(connection, 'CASE'))

    def test_trailing_space_counts_after_upgrade(self):
        self._upgrade_with_profile_case()

        with self.engine.begin() as connection:
            _insert_profile(connection, 2, 'case')
            _insert_profile(connection, 3, 'case ')
        with self.engine.connect() as connection:
            self.assertEqual(['case'], _names_equal_to(connection, 'case'))
            self.assertEqual(['case '], _names_equal_to(connection, 'case '))
            self.assertEqual([], _names_equal_to(connection, 'Case '))

    def test_exact_duplicate_is_still_refused_after_upgrade(self):
        self._upgrade_with_profile_case()

        with self.engine.connect() as connection:
            self.assertRaises(db_exception.DBDuplicateEntry,
                              _insert_profile, connection, 2, 'Case')

    def test_state_in_other_case_is_refused_after_upgrade(self):
        self._upgrade_with_profile_case()
        insert = sa.text(
            'INSERT INTO extended_accelerator_requests (uuid, state, '
            'device_profile_id, device_profile_group_id, created_at) '
            'VALUES (:uuid, :state, 1, 0, :created_at)')

        with self.engine.begin() as connection:
            connection.execute(insert, {
                'uuid': '6f708192-0000-4000-8000-000000000001',
                'state': 'Bound', 'created_at': CREATED})
        with self.engine.connect() as connection:
            # oslo.db maps no CHECK violation; MariaDB reports it as error 4025.
            self.assertRaises(
                (db_exception.DBError, sa.exc.DBAPIError),
                connection.execute, insert, {
                    'uuid': '6f708192-0000-4000-8000-000000000002',
                    'state': 'bound', 'created_at': CREATED})


class SQLiteCollationMigrationTest(CollationMigrationTestMixin,
                                   base.TestCase):
    backend = 'sqlite'


class MySQLCollationMigrationTest(CollationMigrationTestMixin, base.TestCase):
    backend = 'mysql'

    def _collations(self, engine):
        """{(table, column or None for the table's default): collation}."""
        with engine.connect() as connection:
            tables = connection.execute(sa.text(
                'SELECT table_name, table_collation '
                'FROM information_schema.tables '
                "WHERE table_schema = DATABASE() "
                "AND table_name != 'alembic_version'")).all()
            columns = connection.execute(sa.text(
                'SELECT table_name, column_name, collation_name '
                'FROM information_schema.columns '
                'WHERE table_schema = DATABASE() '
                "AND table_name != 'alembic_version' "
                'AND collation_name IS NOT NULL')).all()
        found = {(table, None): collation for table, collation in tables}
        found.update({(table, column): collation
                      for table, column, collation in columns})
        return found

    def _expected_collation(self, engine):
        with engine.connect() as connection:
            return models.mysql_binary_collation(connection)

    def test_previous_revision_conflates_case(self):
        # Why the revision exists: the server's default collation ignores case.
        migration.upgrade(PREVIOUS, engine=self.engine)
        with self.engine.begin() as connection:
            _insert_profile(connection, 1, 'Case')

        with self.engine.connect() as connection:
            self.assertRaises(db_exception.DBDuplicateEntry,
                              _insert_profile, connection, 2, 'case')

    def test_every_string_column_of_the_migrated_schema_is_binary(self):
        self._upgrade_with_profile_case()
        collations = self._collations(self.engine)

        self.assertEqual(
            set(models.Base.metadata.tables),
            {table for table, column in collations if column is None})
        self.assertIn(('device_profiles', 'name'), collations)
        self.assertEqual({self._expected_collation(self.engine)},
                         set(collations.values()), collations)

    def test_every_string_column_of_the_created_schema_is_binary(self):
        created = self.useFixture(
            database.Database(self.backend, schema='models'))
        collations = self._collations(created.engine)

        self.assertEqual(
            set(models.Base.metadata.tables),
            {table for table, column in collations if column is None})
        self.assertIn(('device_profiles', 'name'), collations)
        self.assertEqual({self._expected_collation(created.engine)},
                         set(collations.values()), collations)

    def test_mariadb_chooses_nopad_bin(self):
        with self.engine.connect() as connection:
            version = connection.execute(sa.text('SELECT VERSION()')).scalar()
        if 'MariaDB' not in version:
            self.skipTest('not a MariaDB server: %s' % version)

        self.assertEqual('utf8mb4_nopad_bin',
                         self._expected_collation(self.engine))


class PostgreSQLCollationMigrationTest(CollationMigrationTestMixin,
                                       base.TestCase):
    backend = 'postgresql'


class _Collations:
    """A connection to a server that has ``names`` (SHOW COLLATION only)."""

    def __init__(self, names):
        self.names = names

    def execute(self, statement):
        return self

    def scalars(self):
        return iter(self.names)


class BinaryCollationChoiceTest(base.TestCase):

    def test_mariadb_collation_first(self):
        self.assertEqual('utf8mb4_nopad_bin', models.mysql_binary_collation(
            _Collations(['utf8mb4_bin', 'utf8mb4_nopad_bin',
                         'utf8mb4_0900_bin'])))

    def test_mysql_8_collation(self):
        self.assertEqual('utf8mb4_0900_bin', models.mysql_binary_collation(
            _Collations(['utf8mb4_0900_ai_ci', 'utf8mb4_bin',
                         'utf8mb4_0900_bin'])))

    def test_server_without_a_no_pad_binary_collation_is_refused(self):
        # utf8mb4_bin pads: 'case ' would still equal 'case'.
        self.assertRaises(RuntimeError, models.mysql_binary_collation,
                          _Collations(['utf8mb4_general_ci', 'utf8mb4_bin']))
