"""The conductor's binder: its threads, its queue, its leases and the
claim made as a bind is recorded.

The fixture (``test_bind_transactions.BindingTestsBase``) is a real agent
with the fake driver over the fake:// transport, and a recorder of the
events the binder sends in place of Nova. The agent calls are
``test_agent_calls``', the sweep ``test_bind_sweep``'s.
"""

import dataclasses

import fixtures
import sqlalchemy as sa
from oslo_utils import uuidutils

from cyborg.conductor import arqs
from cyborg.conductor import binder as conductor_binder
from cyborg.conductor import bind_transactions
from cyborg.tests import base
from cyborg.tests.unit.conductor import recording_binder
from cyborg.tests.unit.conductor import test_agent_calls
from cyborg.tests.unit.conductor import test_bind_transactions as cases
from cyborg.tests.unit.db import records
from cyborg.tests.unit.objects import test_list_statement_counts

HOST = cases.HOST
wait_for = cases.wait_for
RefusingBus = test_agent_calls.RefusingBus


class ThreadTests(cases.BindingTestsBase):
    """The workers bind what is submitted; stopping gives the work back."""

    def test_a_new_binder_finishes_recorded_binds_at_start(self):
        arq_uuids = [self.make_arq(self.providers[0]) for _ in range(3)]

        self.binder.start()

        self.assertTrue(wait_for(lambda: self.states(arq_uuids)
                                 == ['Bound'] * 3))
        # Nova is told just after the commit that set the states.
        self.assertTrue(wait_for(lambda: len(self.nova.events()) >= 3))
        self.assertEqual(3, len(self.nova.events()))

    def test_submit_returns_at_once_and_workers_bind(self):
        self.binder = self.make_binder('conductor-1', bind_timeout=3)
        self.binder.start()
        arq_uuid = self.make_arq(self.providers[2])

        self.binder.submit([arq_uuid])

        # The bind waits 3 s for an agent that never answers; a submit
        # that waited for it would leave the ARQ BindFailed here.
        self.assertEqual('BindStarted', self.arq(arq_uuid).state)
        self.assertTrue(wait_for(lambda: self.states([arq_uuid])
                                 == ['BindFailed']))

    def test_stop_releases_the_leases_of_unfinished_work(self):
        arq_uuid = self.make_arq(self.providers[0])
        # Work this binder holds but has not finished when it stops.
        self.claim([arq_uuid], self.binder.owner)
        self.binder.under_way.add([arq_uuid])
        self.binder.start()

        self.binder.stop()

        self.assertIsNone(self.owner_of(arq_uuid))
        self.assertEqual('BindStarted', self.arq(arq_uuid).state)
        # The next binder takes it over at once, with the handle chosen.
        successor = self.make_binder('conductor-1')
        successor.start()
        self.assertTrue(wait_for(lambda: self.states([arq_uuid])
                                 == ['Bound']))
        self.assertEqual(1, self.handles_in_use())


class RecordedClaimTests(cases.BindingTestsBase):
    """The transaction that records a bind (``arqs.record_bind``) claims
    it for the binder: after its commit the binder's work starts with the
    agent call."""

    def record(self, binder, rp_uuid):
        """An Initial ARQ bound to ``rp_uuid`` as the conductor's
        ``bind_arqs`` binds it (``arqs.record_bind``, then ``submit``); its
        uuid, the commits and the statements the recording made."""
        arq_uuid = records.make_arq(self.context, self.profile,
                                    project_id='project-1').uuid
        commits = []
        committed = commits.append
        sa.event.listen(self.database.engine, 'commit', committed)
        try:
            with test_list_statement_counts.counting_statements(
                    self.database.engine) as statements:
                recorded = arqs.record_bind(self.context, {arq_uuid: {
                    'hostname': HOST, 'device_rp_uuid': rp_uuid,
                    'instance_uuid': uuidutils.generate_uuid()}},
                    lease=binder.lease, claim=binder.claim_for_recording)
        finally:
            sa.event.remove(self.database.engine, 'commit', committed)
        binder.submit(recorded.arq_uuids, recorded.claimed)
        return arq_uuid, len(commits), len(statements)

    def test_one_commit_records_leases_and_takes_a_handle(self):
        arq_uuid, commits, _ = self.record(self.binder, self.providers[0])

        self.assertEqual(1, commits)
        row = self.arq_row(arq_uuid)
        self.assertEqual(('BindStarted', self.binder.owner),
                         (row.state, row.bind_owner))
        self.assertIsNotNone(row.attach_handle_id)
        self.assertEqual(1, self.handles_in_use())
        # Queued with its claim: binding it costs the finishing
        # transaction and the event sent, no claim.
        batch, claimed = self.binder._queue.get_nowait()
        self.assertEqual([arq_uuid], batch)
        with test_list_statement_counts.counting_statements(
                self.database.engine) as statements:
            ended = self.binder.bind(batch, claimed)
        self.assertEqual({arq_uuid: 'Bound'}, ended)
        self.assertEqual(cases.StatementCountTests.FINISH + 1,
                         len(statements))
        self.assertEqual(row.attach_handle_id,
                         self.arq_row(arq_uuid).attach_handle_id)
        self.assertEqual(1, self.handles_in_use())

    def test_the_statement_that_records_the_bind_takes_the_lease(self):
        _, _, alone = self.record(recording_binder.RecordingBinder(),
                                  self.providers[0])
        arq_uuid, _, claimed = self.record(self.binder, self.providers[0])

        # The claim's statements but take_leases: the recording UPDATE leased.
        self.assertEqual(alone + cases.StatementCountTests.CLAIM - 1, claimed)
        row = self.arq_row(arq_uuid)
        self.assertEqual(self.binder.owner, row.bind_owner)
        self.assertEqual(row.updated_at + self.binder.settings.lease,
                         row.bind_lease_expires_at)

    def test_a_claim_that_loses_a_handle_records_the_bind_alone(self):
        real_take = bind_transactions.attach_handles.take
        races = []

        def take_lost(context, attach_handle_ids, now):
            # Another binder took the handle after the locking read.
            if not races:
                races.append(attach_handle_ids)
                return 0
            return real_take(context, attach_handle_ids, now)

        self.useFixture(fixtures.MonkeyPatch(
            'cyborg.conductor.bind_transactions.attach_handles.take',
            take_lost))

        arq_uuid, commits, _ = self.record(self.binder, self.providers[0])

        self.assertEqual(1, len(races))
        # The claim's transaction was rolled back; the bind was recorded
        # alone, in a transaction of its own.
        self.assertEqual(1, commits)
        row = self.arq_row(arq_uuid)
        self.assertEqual(('BindStarted', None, None),
                         (row.state, row.bind_owner, row.attach_handle_id))
        self.assertEqual(0, self.handles_in_use())
        batch, claimed = self.binder._queue.get_nowait()
        self.assertEqual(([arq_uuid], None), (batch, claimed))
        self.assertEqual({arq_uuid: 'Bound'}, self.binder.bind(batch))

    def test_stop_gives_back_the_leases_of_claimed_binds_still_queued(self):
        # One worker, busy with a bind whose agent calls the bus refuses.
        bus = RefusingBus()
        binder = conductor_binder.Binder(
            'conductor-2', dataclasses.replace(cases.SETTINGS, workers=1,
                                               bind_timeout=60),
            nova=lambda: self.nova, agents=bus)
        self.addCleanup(binder.stop)
        binder.start()
        self.record(binder, self.providers[0])
        self.assertTrue(wait_for(lambda: bus.calls))
        queued, _, _ = self.record(binder, self.providers[3])
        self.assertEqual(binder.owner, self.arq_row(queued).bind_owner)

        binder.stop()

        row = self.arq_row(queued)
        self.assertEqual(('BindStarted', None),
                         (row.state, row.bind_owner))
        self.assertEqual(set(), binder.under_way.uuids())
        # The next binder takes it over at once, with the handle chosen.
        successor = self.make_binder('conductor-3')
        successor.start()
        self.assertTrue(wait_for(lambda: self.states([queued])
                                 == ['Bound']))
        self.assertEqual(row.attach_handle_id,
                         self.arq_row(queued).attach_handle_id)


class SQLiteThreadTests(ThreadTests, base.TestCase):
    pass


class SQLiteRecordedClaimTests(RecordedClaimTests, base.TestCase):
    pass
