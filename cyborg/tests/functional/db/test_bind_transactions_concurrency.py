"""The bind transactions on MariaDB and PostgreSQL, and binders racing.

The cases of ``cyborg.tests.unit.conductor.test_bind_transactions`` and
``test_binder`` run again on the servers production uses, where the locking
read of free attach handles (``claim``) and the row locks of the finishing
transaction (``finish``) do the work SQLite's single writer does. The race:
two binders (two conductors) with several workers each get more ARQs than
there are handles, submitted from several threads at once; every handle
must end up given exactly once and every other ARQ BindFailed, each ARQ
reported to Nova once.
"""

import collections
import threading

import sqlalchemy as sa
from oslo_utils import uuidutils

from cyborg.conductor import arqs as conductor_arqs
from cyborg.tests import base
from cyborg.tests.unit.conductor import test_agent_calls as agent_cases
from cyborg.tests.unit.conductor import test_bind_finishing as finish_cases
from cyborg.tests.unit.conductor import test_bind_sweep as sweep_cases
from cyborg.tests.unit.conductor import test_bind_transactions as cases
from cyborg.tests.unit.conductor import test_bind_writes as writes_cases
from cyborg.tests.unit.conductor import test_binder as binder_cases
from cyborg.tests.unit.db import records

ARQ = cases.ARQ
AttachHandle = cases.AttachHandle


class RaceTests(cases.BindingTestsBase):

    def test_more_arqs_than_handles_from_two_binders(self):
        # Card 0 (four handles) and card 3 (eight): twelve handles.
        arq_uuids = [self.make_arq(self.providers[card])
                     for card in (0, 3) for _ in range(18)]

        def submit(binder, index):
            binder.submit([arq_uuids[index]])

        self.from_six_threads(len(arq_uuids), submit)

        self.assert_each_handle_given_once(arq_uuids)

    def test_more_binds_recorded_than_handles_from_two_conductors(self):
        # As two conductors' bind_arqs do: each records and claims its
        # binds in one transaction.
        arq_uuids = [records.make_arq(self.context, self.profile,
                                      project_id='project-1').uuid
                     for _ in range(36)]

        def bind(binder, index):
            recorded = conductor_arqs.record_bind(
                self.context, {arq_uuids[index]: {
                    'hostname': cases.HOST,
                    'device_rp_uuid': self.providers[(0, 3)[index % 2]],
                    'instance_uuid': uuidutils.generate_uuid()}},
                lease=binder.lease, claim=binder.claim_for_recording)
            binder.submit(recorded.arq_uuids, recorded.claimed)

        self.from_six_threads(len(arq_uuids), bind)

        self.assert_each_handle_given_once(arq_uuids)

    def from_six_threads(self, count, work):
        """``work(binder, index)`` for each index below ``count``, six
        threads at once, the indexes shared between two started binders."""
        # Leases of 15 s, not the 3 s of SETTINGS: an event whose sender
        # is stalled past its lease (a loaded machine) is sent again by the
        # other binder's sweep, by design (at least once), which these tests
        # of claims do not look at.
        binders = [self.make_binder('conductor-1b', sweep_interval=5),
                   self.make_binder('conductor-2', sweep_interval=5)]
        for binder in binders:
            binder.start()
        start = threading.Barrier(6)

        def run(part):
            start.wait()
            for index in range(part, count, 6):
                work(binders[index % 2], index)

        threads = [threading.Thread(target=run, args=(part,))
                   for part in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def assert_each_handle_given_once(self, arq_uuids):
        """Card 0's four handles and card 3's eight each bound once, the
        other ARQs failed holding none, Nova told of each ARQ."""
        self.assertTrue(cases.wait_for(
            lambda: 'BindStarted' not in self.states(arq_uuids), 60))
        arqs = [self.arq(arq_uuid) for arq_uuid in arq_uuids]
        states = collections.Counter(arq.state for arq in arqs)
        self.assertEqual({'Bound': 12, 'BindFailed': 24}, dict(states))
        handles = [arq.attach_handle_uuid for arq in arqs
                   if arq.state == 'Bound']
        self.assertEqual(12, len(set(handles)))
        self.assertEqual(12, self.handles_in_use())
        self.assertEqual(
            [None] * 24,
            [arq.attach_handle_uuid for arq in arqs
             if arq.state == 'BindFailed'])
        # Nova is told just after the commit that set the states.
        self.assertTrue(cases.wait_for(
            lambda: len(self.nova.events()) >= len(arq_uuids)))
        self.assertEqual(sorted(arq_uuids),
                         sorted(event['tag'] for event in self.nova.events()))

    def test_threads_binding_one_instance_tell_nova_once(self):
        instance = uuidutils.generate_uuid()
        arq_uuids = [self.make_arq(self.providers[3], instance)
                     for _ in range(6)]
        start = threading.Barrier(6)

        def bind(arq_uuid):
            start.wait()
            self.binder.bind([arq_uuid])

        threads = [threading.Thread(target=bind, args=(arq_uuid,))
                   for arq_uuid in arq_uuids]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        self.assertEqual(['Bound'] * 6, self.states(arq_uuids))
        [events] = self.nova.sent
        self.assertEqual(sorted(arq_uuids),
                         sorted(event['tag'] for event in events))
        with self.database.engine.connect() as connection:
            self.assertEqual(0, connection.execute(
                sa.select(sa.func.count()).where(
                    ARQ.c.bind_event_pending.is_not(None))).scalar())


class SQLiteRaceTests(RaceTests, base.TestCase):
    pass


class MariaDBRaceTests(RaceTests, base.TestCase):
    backend = 'mysql'


class PostgreSQLRaceTests(RaceTests, base.TestCase):
    backend = 'postgresql'


class MariaDBClaimOutcomeTests(cases.ClaimOutcomeTests, base.TestCase):
    backend = 'mysql'


class PostgreSQLClaimOutcomeTests(cases.ClaimOutcomeTests, base.TestCase):
    backend = 'postgresql'


class MariaDBFinishOutcomeTests(finish_cases.FinishOutcomeTests,
                                base.TestCase):
    backend = 'mysql'


class PostgreSQLFinishOutcomeTests(finish_cases.FinishOutcomeTests,
                                   base.TestCase):
    backend = 'postgresql'


class MariaDBPrepareOutcomeTests(agent_cases.PrepareOutcomeTests,
                                 base.TestCase):
    backend = 'mysql'


class PostgreSQLPrepareOutcomeTests(agent_cases.PrepareOutcomeTests,
                                    base.TestCase):
    backend = 'postgresql'


class MariaDBNovaEventTests(finish_cases.NovaEventTests, base.TestCase):
    backend = 'mysql'


class PostgreSQLNovaEventTests(finish_cases.NovaEventTests, base.TestCase):
    backend = 'postgresql'


class MariaDBThreadTests(binder_cases.ThreadTests, base.TestCase):
    backend = 'mysql'


class PostgreSQLThreadTests(binder_cases.ThreadTests, base.TestCase):
    backend = 'postgresql'


class MariaDBSweepTests(sweep_cases.SweepTests, base.TestCase):
    backend = 'mysql'


class PostgreSQLSweepTests(sweep_cases.SweepTests, base.TestCase):
    backend = 'postgresql'


class MariaDBStatementCountTests(cases.StatementCountTests, base.TestCase):
    backend = 'mysql'


class PostgreSQLStatementCountTests(cases.StatementCountTests,
                                   base.TestCase):
    backend = 'postgresql'


class MariaDBBindWritesTests(writes_cases.BindWritesTests, base.TestCase):
    backend = 'mysql'


class PostgreSQLBindWritesTests(writes_cases.BindWritesTests, base.TestCase):
    backend = 'postgresql'


class MariaDBRecordedClaimTests(binder_cases.RecordedClaimTests,
                                base.TestCase):
    backend = 'mysql'


class PostgreSQLRecordedClaimTests(binder_cases.RecordedClaimTests,
                                   base.TestCase):
    backend = 'postgresql'
