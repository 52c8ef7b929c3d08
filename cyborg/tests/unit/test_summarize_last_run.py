"""tools/summarize-last-run.py: the one line tools/run-tests.sh ends with.

It reads a subunit v2 stream (what ``stestr last --subunit`` prints). The
streams here are real ones: written with subunit's own StreamResult, and
one of a test run in a subprocess whose servers are missing, so that the
skip reasons are those the fixtures give.
"""

import importlib.util
import io
import os
import pathlib
import subprocess
import sys
import textwrap

import fixtures
import subunit

from cyborg.tests import base
from cyborg.tests.fixtures import skips

REPO = pathlib.Path(__file__).resolve().parents[3]
SCRIPT = REPO / 'tools' / 'summarize-last-run.py'


def _load():
    spec = importlib.util.spec_from_file_location('summarize_last_run',
                                                  SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


summarizer = _load()


def stream_of(*tests):
    """A subunit v2 stream of ``(test id, status, skip reason or None)``."""
    output = io.BytesIO()
    result = subunit.StreamResultToBytes(output)
    result.startTestRun()
    for test_id, status, reason in tests:
        result.status(test_id=test_id, test_status='inprogress')
        if reason is not None:
            result.status(test_id=test_id, file_name='reason',
                          file_bytes=reason.encode('utf-8'),
                          mime_type='text/plain; charset=utf8', eof=True)
        result.status(test_id=test_id, test_status=status)
    result.stopTestRun()
    return output.getvalue()


MARIADB = skips.not_running_reason(
    skips.MARIADB, '127.0.0.1:3306', 'mysql+mysqldb://root@127.0.0.1:3306/; '
    'OperationalError: (2002, "Can\'t connect")')
POSTGRESQL = skips.not_running_reason(
    skips.POSTGRESQL, '127.0.0.1:5432', 'connection refused\n  Is the '
    'server running on that host?')
RABBIT_NOT_INSTALLED = skips.not_installed_reason(
    skips.RABBITMQ, 'no rabbitmq-server, package rabbitmq-server')


class TestSummary(base.TestCase):

    def test_counts_without_skips(self):
        line = summarizer.summarize(stream_of(
            ('a', 'success', None), ('b', 'xfail', None),
            ('c', 'fail', None), ('d', 'uxsuccess', None)))
        self.assertEqual('tests: 2 passed, 2 failed, 0 skipped', line)

    def test_skips_of_missing_servers_name_them_and_the_command(self):
        tests = [('ok', 'success', None)]
        tests += [('m%d' % index, 'skip', MARIADB) for index in range(3)]
        tests += [('p%d' % index, 'skip', POSTGRESQL) for index in range(2)]

        line = summarizer.summarize(stream_of(*tests))

        self.assertEqual(
            'tests: 1 passed, 0 failed, 5 skipped: 3 because MariaDB is not '
            'running at 127.0.0.1:3306, 2 because PostgreSQL is not running '
            'at 127.0.0.1:5432; run tools/start-services.sh to start MariaDB '
            'and PostgreSQL', line)
        self.assertNotIn('\n', line)

    def test_other_reasons_count_under_their_first_words(self):
        line = summarizer.summarize(stream_of(
            ('a', 'skip', 'chromium is not installed'),
            ('b', 'skip', 'chromium is not installed'),
            ('c', 'skip', 'signal handlers need the main thread (a thread)'),
            ('d', 'skip', None),
            ('e', 'skip', RABBIT_NOT_INSTALLED)))

        self.assertEqual(
            'tests: 0 passed, 0 failed, 5 skipped: 2 because chromium is not '
            'installed, 1 because RabbitMQ is not installed, 1 because no '
            'reason given, 1 because signal handlers need the main thread; '
            'run tools/start-services.sh to start RabbitMQ', line)

    def test_a_long_other_reason_is_cut(self):
        group, server = summarizer.skip_group('x' * 200)
        self.assertIsNone(server)
        self.assertEqual('x' * 77 + '...', group)

    def test_the_script_prints_the_last_stestr_run(self):
        # Run as tools/run-tests.sh runs it: in a directory whose stestr
        # repository holds one run (loaded from a stream, as stestr does).
        directory = self.useFixture(fixtures.TempDir()).path
        (pathlib.Path(directory) / '.stestr.conf').write_text(
            '[DEFAULT]\ntest_path=.\n')
        stream = stream_of(('ok', 'success', None), ('m', 'skip', MARIADB))
        subprocess.run([sys.executable, '-m', 'stestr', 'init'],
                       cwd=directory, check=True, capture_output=True)
        subprocess.run([sys.executable, '-m', 'stestr', 'load'],
                       cwd=directory, input=stream, capture_output=True)

        output = subprocess.run([sys.executable, str(SCRIPT)], cwd=directory,
                                capture_output=True, check=True, text=True)

        self.assertEqual(
            'tests: 1 passed, 0 failed, 1 skipped: 1 because MariaDB is not '
            'running at 127.0.0.1:3306; run tools/start-services.sh to start '
            'MariaDB\n', output.stdout)


# A test module run in a subprocess, every server on a closed port and no
# program on PATH (the private MariaDB's install script is looked up there).
MODULE = '''
import testtools

from cyborg.tests.fixtures import database
from cyborg.tests.fixtures import db_server
from cyborg.tests.fixtures import messaging


class UsesServers(testtools.TestCase):

    def test_mysql_one(self):
        self.useFixture(database.Database('mysql'))

    def test_mysql_two(self):
        self.useFixture(database.Database('mysql'))

    def test_postgresql(self):
        self.useFixture(database.Database('postgresql'))

    def test_rabbit(self):
        self.useFixture(messaging.RabbitIsolation())

    def test_private_mariadb(self):
        self.useFixture(db_server.DatabaseServer('mysql'))

    def test_sqlite(self):
        self.useFixture(database.Database('sqlite'))
'''


class TestSkipsOfTheFixtures(base.TestCase):

    def test_missing_servers_of_the_fixtures_are_grouped(self):
        directory = self.useFixture(fixtures.TempDir()).path
        (pathlib.Path(directory) / 'uses_servers.py').write_text(
            textwrap.dedent(MODULE))
        environment = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [directory, str(REPO)]))
        environment.pop('CI', None)
        environment.update({
            'PATH': directory,
            'CYBORG_TEST_MYSQL_URL': 'mysql+pymysql://root:secret@127.0.0.1:9/',
            'CYBORG_TEST_POSTGRESQL_URL':
                'postgresql+psycopg://postgres@127.0.0.1:9/postgres',
            'CYBORG_TEST_RABBIT_URL': 'rabbit://guest:guest@127.0.0.1:9/'})

        run = subprocess.run([sys.executable, '-m', 'subunit.run',
                              'uses_servers'], cwd=directory, env=environment,
                             capture_output=True, timeout=120)

        self.assertEqual(
            'tests: 1 passed, 0 failed, 5 skipped: 2 because MariaDB is not '
            'running at 127.0.0.1:9, 1 because MariaDB is not installed, 1 '
            'because PostgreSQL is not running at 127.0.0.1:9, 1 because '
            'RabbitMQ is not running at 127.0.0.1:9; '
            'run tools/start-services.sh to start MariaDB, PostgreSQL and '
            'RabbitMQ', summarizer.summarize(run.stdout), run.stderr)
        self.assertNotIn(b'secret', run.stdout)
