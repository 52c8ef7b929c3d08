"""SQLite file databases (the all-in-one) take concurrent writers."""

import os
import sqlite3
import threading

import fixtures
import sqlalchemy as sa
from oslo_db import api as oslo_db_api
from oslo_db.sqlalchemy import engines

from cyborg import context as cyborg_context
from cyborg.db import api as db_api
from cyborg.tests import base
from cyborg.tests.fixtures import database

THREADS = 4
ROUNDS = 25


class TestSQLiteWriters(base.TestCase):

    def setUp(self):
        super().setUp()
        path = os.path.join(self.useFixture(fixtures.TempDir()).path, 'db')
        # oslo.db's engine, with its own BEGIN listener, as services get.
        self.engine = engines.create_engine('sqlite:///%s' % path,
                                            max_retries=0)
        self.addCleanup(self.engine.dispose)

    def _tuned(self):
        db_api._tune_sqlite(self.engine)
        with self.engine.begin() as connection:
            connection.execute(sa.text(
                'CREATE TABLE counter (id INTEGER PRIMARY KEY, n INTEGER)'))
            connection.execute(sa.text('INSERT INTO counter VALUES (1, 0)'))

    def test_file_database_runs_in_wal_mode_and_waits_for_the_lock(self):
        self._tuned()
        with self.engine.connect() as connection:
            self.assertEqual('wal', connection.execute(
                sa.text('PRAGMA journal_mode')).scalar())
            self.assertEqual(db_api.SQLITE_BUSY_TIMEOUT_MS, connection.execute(
                sa.text('PRAGMA busy_timeout')).scalar())

    def test_file_database_connections_are_kept_in_a_pool(self):
        engine = engines.create_engine(
            'sqlite:///%s' % os.path.join(
                self.useFixture(fixtures.TempDir()).path, 'pooled'),
            sqlite_fk=True, max_retries=0)
        self.addCleanup(engine.dispose)
        db_api._tune_sqlite(engine)

        self.assertIsInstance(engine.pool, sa.pool.QueuePool)
        with engine.connect() as connection:
            first = connection.connection.dbapi_connection
        used = []

        def read():
            # Another thread gets the same connection, which still runs
            # oslo.db's listeners (foreign keys) and this module's.
            with engine.connect() as connection:
                used.append((
                    connection.connection.dbapi_connection,
                    connection.execute(
                        sa.text('PRAGMA foreign_keys')).scalar(),
                    connection.execute(
                        sa.text('PRAGMA busy_timeout')).scalar()))

        thread = threading.Thread(target=read)
        thread.start()
        thread.join()
        self.assertEqual([(first, 1, db_api.SQLITE_BUSY_TIMEOUT_MS)], used)

    def _other_can_write(self):
        # Another connection that gives up on a held lock at once.
        other = sqlite3.connect(self.engine.url.database, timeout=0)
        try:
            other.execute('UPDATE counter SET n = n + 1')
            other.commit()
            return True
        except sqlite3.OperationalError as error:
            self.assertIn('database is locked', str(error))
            return False
        finally:
            other.close()

    def _read_in_transaction(self):
        with self.engine.begin() as connection:
            connection.execute(sa.text('SELECT n FROM counter'))
            # Readers are never held up, whoever holds the write lock.
            with self.engine.connect() as reader:
                self.assertIsNotNone(reader.execute(
                    sa.text('SELECT n FROM counter')).scalar())
            return self._other_can_write()

    def test_only_a_writers_transaction_takes_the_write_lock_first(self):
        self._tuned()
        # A reader's transaction holds no write lock.
        self.assertTrue(self._read_in_transaction())

        db_api._writing.pending = True
        self.addCleanup(setattr, db_api._writing, 'pending', False)
        # A writer's holds it from its start, even before it writes...
        self.assertFalse(self._read_in_transaction())
        # ...and only the first transaction after the mark is a writer's.
        self.assertFalse(db_api._writing.pending)
        self.assertTrue(self._read_in_transaction())

    def test_writer_marks_only_its_own_attempt(self):
        seen = []

        @db_api.writer
        def write(context):
            seen.append(db_api._writing.pending)

        self.assertFalse(getattr(db_api._writing, 'pending', False))
        self.useFixture(database.Database('sqlite'))
        write(cyborg_context.get_admin_context())
        self.assertEqual([True], seen)
        self.assertFalse(db_api._writing.pending)

    def test_locked_errors_are_recognised_and_others_are_not(self):
        locked = sa.exc.OperationalError(
            'INSERT', {}, Exception('database is locked'))
        self.assertTrue(db_api._sqlite_locked(locked))
        self.assertFalse(db_api._sqlite_locked(sa.exc.OperationalError(
            'INSERT', {}, Exception('no such table: devices'))))
        self.assertFalse(db_api._sqlite_locked(ValueError('database is locked')))

    def test_read_then_write_transactions_all_commit(self):
        # Each transaction reads, then writes: two of them interleaving is
        # the case SQLite refuses at once, whatever its busy timeout.
        self._tuned()

        @oslo_db_api.wrap_db_retry(max_retries=20, retry_interval=0.01,
                                   exception_checker=db_api._sqlite_locked)
        def increment():
            with self.engine.begin() as connection:
                n = connection.execute(
                    sa.text('SELECT n FROM counter WHERE id = 1')).scalar()
                connection.execute(
                    sa.text('UPDATE counter SET n = :n WHERE id = 1'),
                    {'n': n + 1})

        errors = []

        def work():
            try:
                for _ in range(ROUNDS):
                    increment()
            except Exception as error:  # noqa: BLE001 - reported below
                errors.append(error)

        threads = [threading.Thread(target=work) for _ in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.assertEqual([], errors)
        with self.engine.connect() as connection:
            self.assertEqual(THREADS * ROUNDS, connection.execute(
                sa.text('SELECT n FROM counter')).scalar())
