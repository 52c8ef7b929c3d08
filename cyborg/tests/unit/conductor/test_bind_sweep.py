"""The binder's sweep (``cyborg.conductor.bind_sweep``): binds of a dead
binder taken over, live leases respected, binds past their time failed,
leases renewed while the sweep waits.

The fixture (``test_bind_transactions.BindingTestsBase``) is a real agent
with the fake driver over the fake:// transport, and a recorder of the
events the binder sends in place of Nova.
"""

import datetime
import threading
import time

import sqlalchemy as sa
from oslo_utils import uuidutils

from cyborg.tests import base
from cyborg.tests.unit.conductor import test_bind_transactions as cases
from cyborg.tests.unit.db import records

HOST = cases.HOST
ARQ = cases.ARQ


class SweepTests(cases.BindingTestsBase):
    """Recorded binds are finished by whichever binder is alive."""

    def age(self, arq_uuid, seconds):
        past = datetime.datetime.utcnow() - datetime.timedelta(seconds=seconds)
        self.execute(sa.update(ARQ).where(ARQ.c.uuid == arq_uuid).values(
            updated_at=past))


    def test_bind_of_a_dead_binder_is_taken_over_when_its_lease_ends(self):
        arq_uuid = self.make_arq(self.providers[0])
        now = datetime.datetime.utcnow()
        # A conductor claimed it, chose a handle, and died.
        [item] = self.claim([arq_uuid], 'dead/1/x', now).work
        self.execute(sa.update(ARQ).where(ARQ.c.uuid == arq_uuid).values(
            bind_lease_expires_at=now - datetime.timedelta(seconds=1)))

        self.assertEqual([arq_uuid], self.binder.sweep())
        self.binder.bind([arq_uuid])

        arq = self.arq(arq_uuid)
        self.assertEqual('Bound', arq.state)
        self.assertEqual(item.attach_handle_id, arq.attach_handle_id)
        self.assertEqual(1, self.handles_in_use())

    def test_live_lease_of_another_binder_is_respected(self):
        arq_uuid = self.make_arq(self.providers[0])
        recorded_at = self.arq(arq_uuid).updated_at
        self.claim([arq_uuid], 'alive/1/x')
        # The claim keeps the time the bind was recorded (bind_timeout).
        self.assertEqual(recorded_at, self.arq(arq_uuid).updated_at)

        self.assertEqual([], self.binder.sweep())
        self.assertEqual({}, self.binder.bind([arq_uuid]))
        self.assertEqual('BindStarted', self.arq(arq_uuid).state)

    def test_sweep_fails_binds_past_bind_timeout_whoever_holds_them(self):
        instance = uuidutils.generate_uuid()
        arq_uuid = self.make_arq(self.providers[0], instance)
        self.claim([arq_uuid], 'alive/1/x')
        self.age(arq_uuid, 31)

        self.binder.sweep()

        arq = self.arq(arq_uuid)
        self.assertEqual('BindFailed', arq.state)
        self.assertIsNone(arq.attach_handle_uuid)
        self.assertEqual(0, self.handles_in_use())
        self.assertEqual([[{'name': 'accelerator-request-bound',
                            'server_uuid': instance, 'tag': arq_uuid,
                            'status': 'failed'}]], self.nova.sent)

    def test_leases_are_renewed_while_the_sweep_waits_for_nova(self):
        # Nova takes the sweep's request and does not answer.
        entered = threading.Event()
        release = threading.Event()

        class HungNova(cases.RecordingNova):
            def send_events(self, events):
                entered.set()
                release.wait(30)
                return False

        binder = self.make_binder('conductor-2', nova=HungNova())
        self.addCleanup(release.set)
        # An instance whose event is owed: the sweep sends it.
        records.make_arq(self.context, self.profile, state='Bound',
                         hostname=HOST, device_rp_uuid=self.providers[0],
                         instance_uuid=uuidutils.generate_uuid(),
                         project_id='project-1')
        self.execute(sa.update(ARQ).values(bind_event_pending=True))
        # Work under way in this binder, with a lease.
        working = self.make_arq(self.providers[3])
        self.claim([working], binder.owner)
        binder.under_way.add([working])

        binder.start()
        self.assertTrue(entered.wait(10))
        first = self.lease_expiry(working)
        # Two renewals' time, the sweep still waiting for Nova.
        time.sleep(2.5)

        self.assertEqual(binder.owner, self.owner_of(working))
        self.assertGreater(self.lease_expiry(working), first)


class SQLiteSweepTests(SweepTests, base.TestCase):
    pass
