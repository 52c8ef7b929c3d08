"""The programming lock of deployables on SQLite, MariaDB and PostgreSQL.

``cyborg.db.queries.deployables`` takes it by compare-and-set: one owner at
a time, an ARQ holding the deployable refuses it, a lock that ran out is
taken over, and neither taking nor giving it back touches ``updated_at``; only
finishing (recording the bitstream) does, and only for the owner.
"""

import datetime

from cyborg.common import vocabulary
from cyborg import context as cyborg_context
from cyborg.db.queries import deployables as queries
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.unit.db import records

NOW = datetime.datetime(2026, 11, 25, 10, 0, 0, 500000)
LATER = NOW + datetime.timedelta(seconds=1)
MUCH_LATER = NOW + datetime.timedelta(seconds=2)
IMAGE = '2c7d5c62-300e-43d5-9902-ebd9918243bb'


class ProgrammingLockTestMixin:

    backend = None

    def setUp(self):
        super().setUp()
        self.useFixture(database.Database(self.backend))
        self.context = cyborg_context.get_admin_context()
        device = records.make_device(self.context)
        self.deployable = records.make_deployable(self.context, device)
        self.uuid = self.deployable.uuid

    def _row(self):
        return queries.get_by_uuid(self.context, self.uuid)[0]

    def _start(self, owner, now=NOW, expires_at=LATER):
        return queries.start_programming(self.context, self.uuid, owner, now,
                                         expires_at)

    def test_one_owner_at_a_time(self):
        updated_at = self._row().updated_at

        self.assertEqual(queries.LOCKED, self._start('a'))
        self.assertEqual(queries.BEING_PROGRAMMED, self._start('b'))

        row = self._row()
        self.assertEqual(('a', LATER), (row.programming_owner,
                                        row.programming_expires_at))
        self.assertEqual(updated_at, row.updated_at)

    def test_a_lock_that_ran_out_is_taken_over(self):
        self._start('dead')

        self.assertEqual(queries.LOCKED,
                         self._start('b', now=LATER, expires_at=MUCH_LATER))
        self.assertEqual('b', self._row().programming_owner)

    def test_being_programmed_until_the_lock_runs_out(self):
        self._start('a')
        deployable_id = self.deployable.id

        self.assertEqual({deployable_id}, queries.being_programmed(
            self.context, [deployable_id], NOW))
        self.assertEqual(set(), queries.being_programmed(
            self.context, [deployable_id], LATER))
        self.assertEqual(set(), queries.being_programmed(
            self.context, [], NOW))

    def test_being_programmed_writes_the_rows_it_locks(self):
        # A Galera cluster certifies only written rows: the check changes
        # updated_at every time, even when the row holds that time already.
        deployable_id = self.deployable.id

        queries.being_programmed(self.context, [deployable_id], NOW)
        self.assertEqual(NOW, self._row().updated_at)
        queries.being_programmed(self.context, [deployable_id], NOW)
        self.assertEqual(NOW + datetime.timedelta(microseconds=1),
                         self._row().updated_at)

    def test_an_arq_holding_the_deployable_refuses_the_lock(self):
        profile = records.make_device_profile(self.context)
        records.make_arq(self.context, profile, hostname='compute-1',
                         deployable_id=self.deployable.id,
                         state=vocabulary.ARQState.BIND_STARTED)

        self.assertEqual(queries.HELD_BY_ARQ, self._start('a'))
        self.assertIsNone(self._row().programming_owner)

    def test_release_gives_the_lock_back_unchanged(self):
        self._start('a')
        updated_at = self._row().updated_at

        self.assertFalse(queries.release_programming(
            self.context, self.uuid, 'b'))
        self.assertTrue(queries.release_programming(
            self.context, self.uuid, 'a'))

        row = self._row()
        self.assertIsNone(row.programming_owner)
        self.assertIsNone(row.programming_expires_at)
        self.assertEqual(updated_at, row.updated_at)
        self.assertEqual(queries.LOCKED, self._start('b'))

    def test_finish_records_the_bitstream_for_the_owner_only(self):
        self._start('a')

        self.assertFalse(queries.finish_programming(
            self.context, self.uuid, 'b', IMAGE))
        self.assertIsNone(self._row().bitstream_id)
        self.assertTrue(queries.finish_programming(
            self.context, self.uuid, 'a', IMAGE))

        row = self._row()
        self.assertEqual(IMAGE, row.bitstream_id)
        self.assertIsNone(row.programming_owner)
        self.assertIsNotNone(row.updated_at)


class SQLiteProgrammingLockTest(ProgrammingLockTestMixin, base.TestCase):
    backend = 'sqlite'


class MySQLProgrammingLockTest(ProgrammingLockTestMixin, base.TestCase):
    backend = 'mysql'


class PostgreSQLProgrammingLockTest(ProgrammingLockTestMixin, base.TestCase):
    backend = 'postgresql'
