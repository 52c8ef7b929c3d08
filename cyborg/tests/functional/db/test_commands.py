"""cyborg-dbsync and cyborg-status run as processes against each backend."""

import os
import subprocess
import sys

import fixtures
import sqlalchemy as sa
from oslo_upgradecheck import upgradecheck

from cyborg.cmd import status
from cyborg.db import migration
from cyborg.tests import base
from cyborg.tests.fixtures import database


def _run(command, config_file, *arguments):
    """Run ``cyborg.cmd.<command>.main`` in a new process.

    Returns the exit code, the standard output and both outputs together.
    """
    script = ('import sys; from cyborg.cmd import %s; sys.exit(%s.main())'
              % (command, command))
    result = subprocess.run(
        [sys.executable, '-c', script, '--config-file', config_file,
         *arguments],
        capture_output=True, text=True, timeout=120, check=False)
    return result.returncode, result.stdout, result.stdout + result.stderr


class CommandsTestMixin:

    backend = None

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(
            database.Database(self.backend, schema=None))
        self.config_file = os.path.join(
            self.useFixture(fixtures.TempDir()).path, 'cyborg.conf')
        with open(self.config_file, 'w') as config:
            config.write('[DEFAULT]\nstate_path = %s\n[database]\n'
                         'connection = %s\n'
                         % (os.path.dirname(self.config_file),
                            self.database.url))

    def test_dbsync_then_status(self):
        code, printed, output = _run('status', self.config_file, 'upgrade',
                                     'check')
        self.assertEqual(2, code, output)
        self.assertIn('Failure', printed)
        self.assertIn('no cyborg schema', printed)

        code, printed, output = _run('dbsync', self.config_file, 'version')
        self.assertEqual((0, 'None\n'), (code, printed), output)

        code, printed, output = _run('dbsync', self.config_file, 'upgrade')
        self.assertEqual(0, code, output)
        self.assertEqual(migration.head_revision(),
                         migration.current_revision(self.database.engine))

        code, printed, output = _run('dbsync', self.config_file, 'version')
        self.assertEqual((0, migration.head_revision() + '\n'),
                         (code, printed), output)

        code, printed, output = _run('status', self.config_file, 'upgrade',
                                     'check')
        # Warnings: neither [placement] nor [nova] is configured here.
        self.assertEqual(1, code, output)
        self.assertIn('The database schema is at %s.'
                      % migration.head_revision(), printed)
        self.assertIn('[placement] is not configured', printed)
        self.assertIn('[nova] is not configured', printed)


class SQLiteCommandsTest(CommandsTestMixin, base.TestCase):
    backend = 'sqlite'


class MySQLCommandsTest(CommandsTestMixin, base.TestCase):
    backend = 'mysql'


class PostgreSQLCommandsTest(CommandsTestMixin, base.TestCase):
    backend = 'postgresql'


class DatabaseSchemaCheckTest(base.TestCase):
    """The schema check's verdicts, in process on SQLite."""

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(database.Database(schema=None))

    def test_empty_database_fails(self):
        result = status.check_database_schema(self.database.engine)

        self.assertEqual(upgradecheck.Code.FAILURE, result.code)
        self.assertIn('run "cyborg-dbsync upgrade"', result.details)

    def test_database_at_head_succeeds(self):
        migration.upgrade(engine=self.database.engine)

        result = status.check_database_schema(self.database.engine)

        self.assertEqual(upgradecheck.Code.SUCCESS, result.code)

    def test_database_at_another_revision_fails_naming_both(self):
        migration.upgrade(engine=self.database.engine)
        with self.database.engine.begin() as connection:
            connection.execute(sa.text(
                "UPDATE alembic_version SET version_num = 'f00dfeedbeef'"))

        result = status.check_database_schema(self.database.engine)

        self.assertEqual(upgradecheck.Code.FAILURE, result.code)
        self.assertIn('f00dfeedbeef', result.details)
        self.assertIn(migration.head_revision(), result.details)

    def test_unreachable_database_fails(self):
        engine = sa.create_engine('sqlite:////nonexistent-dir/cyborg.sqlite')

        result = status.check_database_schema(engine)

        self.assertEqual(upgradecheck.Code.FAILURE, result.code)
        self.assertIn('[database] connection', result.details)

    def test_default_engine_is_the_configured_database(self):
        # The fixture stands in for [database] connection here.
        migration.upgrade(engine=self.database.engine)

        result = status.check_database_schema()

        self.assertEqual(upgradecheck.Code.SUCCESS, result.code)
