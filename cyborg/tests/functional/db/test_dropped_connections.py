"""Pooled connections the server dropped (a restart, an idle timeout).

An outermost reader takes its connection from the pool without the pool's
ping: a statement on a dropped one fails as a disconnect, the pool drops
every older connection and the read runs again at once, without waiting.
A writer's connection is pinged, so a dropped one is replaced before the
writer starts.
"""

import fixtures
import sqlalchemy as sa

from cyborg import context as cyborg_context
from cyborg import exception
from cyborg import objects
from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.unit.db import records


@db_api.reader
def _count(context):
    return context.session.execute(
        sa.select(sa.func.count()).select_from(models.Device)).scalar_one()


@db_api.writer
def _add_device(context):
    records.make_device(context)


class DroppedConnectionsTestMixin:

    backend = None

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(database.Database(self.backend))
        self.context = cyborg_context.get_admin_context()
        records.make_device(self.context)
        # time.sleep itself: the waits between two reads are counted.
        self.sleep = self.useFixture(
            fixtures.MockPatch('cyborg.db.api.time.sleep')).mock

    def _read_waits(self):
        return sum(1 for call in self.sleep.call_args_list
                   if call.args == (db_api.READ_RETRY_INTERVAL,))

    def _drop_server_connections(self):
        """End every connection of the test database (the pool's), from a
        connection of another engine."""
        engine = sa.create_engine(self.database.url,
                                  poolclass=sa.pool.NullPool)
        self.addCleanup(engine.dispose)
        with engine.connect() as connection:
            if self.backend == 'postgresql':
                connection.exec_driver_sql(
                    'SELECT pg_terminate_backend(pid) FROM pg_stat_activity '
                    'WHERE datname = current_database() '
                    'AND pid <> pg_backend_pid()').all()
                return
            ids = connection.exec_driver_sql(
                'SELECT id FROM information_schema.processlist '
                'WHERE db = DATABASE() AND id <> CONNECTION_ID()').scalars()
            for connection_id in ids.all():
                connection.exec_driver_sql('KILL %d' % connection_id)

    def test_a_reader_on_a_dropped_connection_reads_again_at_once(self):
        self.assertEqual(1, _count(self.context))  # a connection pooled
        self._drop_server_connections()

        self.assertEqual(1, _count(self.context))

        self.assertEqual(0, self._read_waits())

    def test_a_lean_page_on_a_dropped_connection_reads_again_at_once(self):
        # Read until the page runs on the DBAPI cursor (cyborg.db.queries.
        # lean): the driver's error must still reach SQLAlchemy, which
        # invalidates the connection, for the read to run again.
        for _ in range(3):
            pooled = objects.Device.list_rows(self.context)
        self.assertEqual(1, len(pooled))
        self._drop_server_connections()

        self.assertEqual(pooled, objects.Device.list_rows(self.context))

        self.assertEqual(0, self._read_waits())

    def test_a_writer_gets_a_live_connection(self):
        self.assertEqual(1, _count(self.context))
        self._drop_server_connections()

        _add_device(self.context)

        self.assertEqual(2, _count(self.context))
        self.assertEqual(0, self._read_waits())

    def test_a_database_that_stays_down_still_fails_after_the_retries(self):
        self.assertEqual(1, _count(self.context))
        self._drop_server_connections()
        self.useFixture(fixtures.MonkeyPatch(
            'cyborg.db.api.READ_RETRY_WINDOW', 60))
        calls = []

        @db_api.reader
        def always_dropped(context):
            calls.append(1)
            _count(context)
            self._drop_server_connections()
            return context.session.execute(sa.text('SELECT 1')).scalar()

        self.assertRaises(exception.DatabaseUnavailable, always_dropped,
                          self.context)
        self.assertEqual(db_api.READ_RETRIES + 1, len(calls))
        # Only the first retry is at once.
        self.assertEqual(db_api.READ_RETRIES - 1, self._read_waits())


class MySQLDroppedConnectionsTest(DroppedConnectionsTestMixin, base.TestCase):
    backend = 'mysql'


class PostgreSQLDroppedConnectionsTest(DroppedConnectionsTestMixin,
                                       base.TestCase):
    backend = 'postgresql'

    def test_the_error_of_a_server_ending_the_connection_drops_it(self):
        # The server's "terminating connection" error (57P01) may reach
        # psycopg before it sees the socket close; it must count as a
        # disconnect all the same: the connection dropped and the read
        # run again at once. Raised here on a live connection, so that only
        # the error's code can tell.
        self.useFixture(fixtures.MonkeyPatch(
            'cyborg.db.api.READ_RETRY_WINDOW', 60))
        calls = []

        @db_api.reader
        def ended(context):
            calls.append(1)
            context.session.execute(sa.text(
                "DO $$ BEGIN RAISE EXCEPTION 'ended' "
                "USING ERRCODE = '57P01'; END $$"))

        self.assertRaises(exception.DatabaseUnavailable, ended, self.context)
        self.assertEqual(db_api.READ_RETRIES + 1, len(calls))
        # The first retry at once, as for a dropped connection.
        self.assertEqual(db_api.READ_RETRIES - 1, self._read_waits())
