"""How the outermost reader's statements run, per backend.

On PostgreSQL an outermost reader runs in autocommit: no BEGIN before its
statements, no ROLLBACK when its connection goes back to the pool (READ
COMMITTED gives each statement its own snapshot either way). Writers, and
readers inside a writer, keep their transaction; on SQLite and MariaDB
every reader keeps one too (MariaDB's snapshot spans a transaction).
"""

import sqlalchemy as sa

from cyborg import context as cyborg_context
from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.unit.db import records


def _in_transaction(context):
    """Whether the database holds a transaction open for the session's
    connection (after its first statement)."""
    connection = context.session.connection()
    dbapi = connection.connection.dbapi_connection
    name = connection.dialect.name
    if name == 'sqlite':
        return dbapi.in_transaction
    if name == 'mysql':
        return bool(connection.exec_driver_sql(
            'SELECT @@in_transaction').scalar_one())
    if hasattr(dbapi, 'info'):  # psycopg 3
        return dbapi.info.transaction_status != 0  # IDLE
    return dbapi.get_transaction_status() != 0  # psycopg2: IDLE


@db_api.reader
def _read(context):
    count = context.session.execute(
        sa.select(sa.func.count()).select_from(models.Device)).scalar_one()
    return count, not _in_transaction(context)


@db_api.writer
def _write_then_read(context):
    records.make_device(context)
    # A reader inside a writer runs in the writer's transaction: it sees
    # the row not yet committed.
    return _read(context), not _in_transaction(context)


class ReadTransactionsTestMixin:

    backend = None
    autocommit_reads = False

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(database.Database(self.backend))
        self.context = cyborg_context.get_admin_context()
        self.transactions = []
        engine = db_api.get_engine()
        sa.event.listen(engine, 'begin', self._began)
        self.addCleanup(sa.event.remove, engine, 'begin', self._began)

    def _began(self, connection):
        self.transactions.append(
            connection.get_execution_options().get('isolation_level'))

    def test_outermost_reader(self):
        records.make_device(self.context)
        self.transactions.clear()

        count, autocommit = _read(self.context)

        self.assertEqual(1, count)
        self.assertEqual(self.autocommit_reads, autocommit)
        self.assertEqual(
            ['AUTOCOMMIT' if self.autocommit_reads else None],
            self.transactions)

    def test_writer_and_its_readers_keep_the_transaction(self):
        (count, read_autocommit), autocommit = _write_then_read(self.context)

        self.assertEqual(1, count)
        self.assertFalse(read_autocommit)
        self.assertFalse(autocommit)

    def test_connection_is_back_in_its_transaction_mode_for_the_next(self):
        _read(self.context)
        # The pool hands the reader's connection to this writer.
        (count, read_autocommit), autocommit = _write_then_read(self.context)
        self.assertEqual((1, False, False), (count, read_autocommit,
                                             autocommit))
        # And back to a reader, which sees the committed row.
        self.assertEqual((1, self.autocommit_reads), _read(self.context))


class SQLiteReadTransactionsTest(ReadTransactionsTestMixin, base.TestCase):
    backend = 'sqlite'


class MySQLReadTransactionsTest(ReadTransactionsTestMixin, base.TestCase):
    backend = 'mysql'


class PostgreSQLReadTransactionsTest(ReadTransactionsTestMixin,
                                     base.TestCase):
    backend = 'postgresql'
    autocommit_reads = True
