"""An unreachable database in cyborg.db.api: which driver errors say so,
which transactions run again, and DatabaseUnavailable at the outermost one.

The errors are the drivers' own classes, built as SQLAlchemy and oslo.db
wrap them; the outage itself, with real servers, is tested in
cyborg/tests/functional/services/test_db_outage.py.
"""

import MySQLdb
import psycopg
import psycopg2
import pymysql
import sqlalchemy as sa
from oslo_db import exception as db_exception

from cyborg import context as cyborg_context
from cyborg.db import api as db_api
from cyborg import exception
from cyborg.tests import base
from cyborg.tests.fixtures import database


def _wrapped(driver_error, kind=sa.exc.OperationalError):
    return kind('SELECT 1', {}, driver_error)


class TestUnreachableReason(base.TestCase):

    def test_mysql_cannot_connect(self):
        error = db_exception.DBConnectionError(_wrapped(
            pymysql.err.OperationalError(2003, "Can't connect")))
        self.assertEqual('OperationalError 2003; retry later',
                         db_api.unreachable_reason(error))

    def test_mysql_lost_connection_not_translated_by_oslo_db(self):
        error = _wrapped(pymysql.err.OperationalError(
            2013, 'Lost connection to MySQL server during query'))
        self.assertEqual('OperationalError 2013; retry later',
                         db_api.unreachable_reason(error))

    def test_mysql_server_shutting_down(self):
        error = db_exception.DBError(_wrapped(
            pymysql.err.OperationalError(1053, 'Server shutdown')))
        self.assertIsNotNone(db_api.unreachable_reason(error))

    def test_mysql_lock_wait_timeout_is_not_an_outage(self):
        error = db_exception.DBError(_wrapped(
            pymysql.err.OperationalError(1205, 'Lock wait timeout')))
        self.assertIsNone(db_api.unreachable_reason(error))

    def test_postgresql_connection_refused_by_libpq(self):
        # No SQLSTATE: libpq failed before the server said anything.
        error = _wrapped(psycopg2.OperationalError(
            'connection to server at "127.0.0.1", port 5432 failed: '
            'Connection refused'))
        reason = db_api.unreachable_reason(error)
        self.assertEqual('OperationalError; retry later', reason)
        self.assertNotIn('127.0.0.1', reason)

    def test_every_driver_says_cannot_connect(self):
        # The production drivers (mysqlclient, psycopg2) and the others.
        for error in (MySQLdb.OperationalError(2003, "Can't connect"),
                      pymysql.err.OperationalError(2003, "Can't connect"),
                      MySQLdb.OperationalError(2013, 'Lost connection'),
                      psycopg2.OperationalError('Connection refused'),
                      psycopg.OperationalError('Connection refused')):
            reason = db_api.unreachable_reason(_wrapped(error))
            self.assertIsNotNone(reason, error)
            self.assertNotIn('refused', reason)
        self.assertIsNone(db_api.unreachable_reason(_wrapped(
            MySQLdb.OperationalError(1205, 'Lock wait timeout'))))

    def test_closed_connection_interface_error(self):
        error = _wrapped(pymysql.err.InterfaceError(0, ''),
                         kind=sa.exc.InterfaceError)
        self.assertIsNotNone(db_api.unreachable_reason(error))

    def test_other_errors_are_not_outages(self):
        for error in (db_exception.DBDeadlock(),
                      db_exception.DBDuplicateEntry(),
                      _wrapped(pymysql.err.IntegrityError(1062, 'dup'),
                               kind=sa.exc.IntegrityError),
                      ValueError('not a database error')):
            self.assertIsNone(db_api.unreachable_reason(error), error)


def _lost_connection():
    return db_exception.DBConnectionError(_wrapped(
        pymysql.err.OperationalError(2013, 'Lost connection')))


class TestTransactions(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(database.Database(backend='sqlite', schema=None))
        self.context = cyborg_context.get_admin_context()
        self.calls = 0

    def _failing(self, failures):
        def run(context):
            self.calls += 1
            if self.calls <= failures:
                raise _lost_connection()
            return context.session.execute(sa.text('SELECT 7')).scalar()
        return run

    def test_reader_runs_again_after_a_lost_connection(self):
        read = db_api.reader(self._failing(failures=db_api.READ_RETRIES))
        self.assertEqual(7, read(self.context))
        self.assertEqual(db_api.READ_RETRIES + 1, self.calls)

    def test_reader_gives_up_with_database_unavailable(self):
        read = db_api.reader(self._failing(failures=100))
        error = self.assertRaises(exception.DatabaseUnavailable, read,
                                  self.context)
        self.assertEqual(503, error.code)
        self.assertIsInstance(error.__cause__,
                              db_exception.DBConnectionError)
        self.assertEqual(db_api.READ_RETRIES + 1, self.calls)

    def test_writer_is_not_run_again(self):
        write = db_api.writer(self._failing(failures=1))
        self.assertRaises(exception.DatabaseUnavailable, write, self.context)
        self.assertEqual(1, self.calls)

    def test_inner_reader_leaves_the_outage_to_the_outermost_writer(self):
        read = db_api.reader(self._failing(failures=1))
        seen = []

        @db_api.writer
        def write(context):
            try:
                read(context)
            except Exception as error:
                seen.append(type(error))
                raise

        self.assertRaises(exception.DatabaseUnavailable, write, self.context)
        self.assertEqual([db_exception.DBConnectionError], seen)
        self.assertEqual(1, self.calls)

    def test_the_outage_is_counted_and_ends_with_a_success(self):
        read = db_api.reader(self._failing(failures=2 * (
            db_api.READ_RETRIES + 1)))
        write = db_api.writer(self._failing(failures=0))
        self.assertRaises(exception.DatabaseUnavailable, read, self.context)
        self.assertTrue(db_api.OUTAGE.ongoing)
        self.assertRaises(exception.DatabaseUnavailable, read, self.context)
        self.assertEqual(2, db_api.OUTAGE._failures)
        self.assertEqual(7, read(self.context))
        self.assertFalse(db_api.OUTAGE.ongoing)
        # An error that is not an outage neither starts nor counts one.
        self.assertRaises(db_exception.DBDuplicateEntry, db_api.writer(
            lambda context: self._raise(db_exception.DBDuplicateEntry())),
            self.context)
        self.assertFalse(db_api.OUTAGE.ongoing)
        self.assertEqual(7, write(self.context))

    @staticmethod
    def _raise(error):
        raise error
