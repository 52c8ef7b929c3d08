"""The writers that end binds (``cyborg.conductor.bind_finishing``): what
they apply of a batch's outcomes, and the Nova events they collect.

They run as the binder runs them (``Binder.bind``, ``Binder.sweep``) over
the fixture of ``test_bind_transactions``: a real agent with the fake
driver, and a recorder of the events sent in place of Nova.
"""

import datetime

import sqlalchemy as sa
from oslo_utils import uuidutils

from cyborg.agent.drivers import base as driver_base
from cyborg.tests import base
from cyborg.tests.unit.conductor import test_bind_transactions as cases

ARQ = cases.ARQ
AttachHandle = cases.AttachHandle


class FinishOutcomeTests(cases.BindingTestsBase):
    """What ``record_outcomes`` applies of the outcomes decided for a
    batch."""

    def test_agent_failure_fails_and_frees_the_handle(self):
        arq_uuid = self.make_arq(self.providers[1])

        self.assertEqual({arq_uuid: 'BindFailed'},
                         self.binder.bind([arq_uuid]))
        arq = self.arq(arq_uuid)
        self.assertIsNone(arq.attach_handle_uuid)
        self.assertEqual(0, self.handles_in_use())
        # The handle is free for the next bind, once the card behaves.
        self.driver.prepare = lambda *args, **kwargs: None
        again = self.make_arq(self.providers[1])
        self.assertEqual({again: 'Bound'}, self.binder.bind([again]))

    def test_one_batch_mixes_outcomes_and_hosts(self):
        instance = uuidutils.generate_uuid()
        good = self.make_arq(self.providers[0], instance)
        failing = self.make_arq(self.providers[1], instance)
        elsewhere = self.make_arq(self.providers[3], instance,
                                  hostname='compute-9')

        ended = self.binder.bind([good, failing, elsewhere])

        self.assertEqual({good: 'Bound', failing: 'BindFailed',
                          elsewhere: 'BindFailed'}, ended)
        [events] = self.nova.sent
        self.assertEqual({good: 'completed', failing: 'failed',
                          elsewhere: 'failed'},
                         {event['tag']: event['status'] for event in events})

    def test_an_outcome_decided_for_an_earlier_bind_leaves_a_later_one_alone(
            self):
        arq_uuid = self.make_arq(self.providers[1])
        instance = uuidutils.generate_uuid()

        def unbind_and_bind_again(*args, **kwargs):
            # While the agent works on the first bind (which fails), the ARQ
            # is unbound, bound again and that bind claimed by this binder.
            with self.database.engine.begin() as connection:
                handle_id = connection.execute(sa.select(
                    ARQ.c.attach_handle_id).where(
                    ARQ.c.uuid == arq_uuid)).scalar()
                connection.execute(sa.update(AttachHandle).where(
                    AttachHandle.c.id == handle_id).values(in_use=False))
                connection.execute(sa.update(ARQ).where(
                    ARQ.c.uuid == arq_uuid).values(
                    state='BindStarted', attach_handle_id=None,
                    instance_uuid=instance, bind_owner=None,
                    bind_lease_expires_at=None,
                    updated_at=datetime.datetime.utcnow()))
            self.claim([arq_uuid], self.binder.owner)
            raise driver_base.PrepareFailed('the first bind fails')

        self.driver.prepare = unbind_and_bind_again

        self.assertEqual({}, self.binder.bind([arq_uuid]))

        # The later bind is untouched: still binding, with its handle.
        arq = self.arq(arq_uuid)
        self.assertEqual(('BindStarted', instance),
                         (arq.state, arq.instance_uuid))
        self.assertEqual(1, self.handles_in_use())
        self.assertEqual([], self.nova.sent)
        # And it finishes as its own bind.
        self.driver.prepare = lambda *args, **kwargs: None
        self.assertEqual({arq_uuid: 'Bound'}, self.binder.bind([arq_uuid]))
        self.assertEqual([{'name': 'accelerator-request-bound',
                           'server_uuid': instance, 'tag': arq_uuid,
                           'status': 'completed'}], self.nova.events())
        self.assertEqual(1, self.handles_in_use())

    def test_unbind_during_bind_is_not_resurrected(self):
        arq_uuid = self.make_arq(self.providers[0])
        real_prepare = self.driver.prepare

        def unbind_meanwhile(*args, **kwargs):
            # What arqs.unbind does, while the agent is preparing.
            with self.database.engine.begin() as connection:
                handle_id = connection.execute(sa.select(
                    ARQ.c.attach_handle_id).where(
                    ARQ.c.uuid == arq_uuid)).scalar()
                connection.execute(sa.update(ARQ).where(
                    ARQ.c.uuid == arq_uuid).values(
                    state='Unbound', attach_handle_id=None, hostname=None,
                    device_rp_uuid=None, instance_uuid=None))
                connection.execute(sa.update(AttachHandle).where(
                    AttachHandle.c.id == handle_id).values(in_use=False))
            return real_prepare(*args, **kwargs)

        self.driver.prepare = unbind_meanwhile

        self.assertEqual({}, self.binder.bind([arq_uuid]))
        arq = self.arq(arq_uuid)
        self.assertEqual('Unbound', arq.state)
        self.assertIsNone(arq.attach_handle_uuid)
        self.assertEqual(0, self.handles_in_use())
        with self.database.engine.connect() as connection:
            self.assertIsNone(connection.execute(sa.select(
                ARQ.c.bind_owner).where(ARQ.c.uuid == arq_uuid)).scalar())

    def test_delete_during_bind_frees_the_handle(self):
        arq_uuid = self.make_arq(self.providers[0])
        real_prepare = self.driver.prepare

        def delete_meanwhile(*args, **kwargs):
            with self.database.engine.begin() as connection:
                handle_id = connection.execute(sa.select(
                    ARQ.c.attach_handle_id).where(
                    ARQ.c.uuid == arq_uuid)).scalar()
                connection.execute(sa.delete(ARQ).where(
                    ARQ.c.uuid == arq_uuid))
                connection.execute(sa.update(AttachHandle).where(
                    AttachHandle.c.id == handle_id).values(in_use=False))
            return real_prepare(*args, **kwargs)

        self.driver.prepare = delete_meanwhile

        self.assertEqual({}, self.binder.bind([arq_uuid]))
        self.assertEqual(0, self.handles_in_use())


class NovaEventTests(cases.BindingTestsBase):
    """Nova hears of an instance once all its ARQs left BindStarted."""

    def test_instance_with_an_arq_still_binding_waits_for_it(self):
        instance = uuidutils.generate_uuid()
        first = self.make_arq(self.providers[0], instance)
        second = self.make_arq(self.providers[3], instance)

        self.binder.bind([first])
        self.assertEqual([], self.nova.sent)

        self.binder.bind([second])
        [events] = self.nova.sent
        self.assertEqual({first: 'completed', second: 'completed'},
                         {event['tag']: event['status'] for event in events})
        self.assertEqual({instance}, {event['server_uuid']
                                      for event in events})

    def test_several_instances_of_one_batch_go_in_one_request(self):
        arq_uuids = [self.make_arq(self.providers[3]) for _ in range(3)]

        self.binder.bind(arq_uuids)

        [events] = self.nova.sent
        self.assertEqual(sorted(arq_uuids),
                         sorted(event['tag'] for event in events))

    def test_events_are_sent_once(self):
        arq_uuid = self.make_arq(self.providers[0])
        self.binder.bind([arq_uuid])

        self.binder.sweep()
        self.binder.bind([arq_uuid])

        self.assertEqual(1, len(self.nova.events()))

    def test_events_nova_did_not_get_are_sent_again_by_the_sweep(self):
        arq_uuid = self.make_arq(self.providers[0])
        self.nova.reachable = False
        self.binder.bind([arq_uuid])
        self.assertEqual(1, len(self.nova.events()))

        self.nova.reachable = True
        # While the sender's lease on the event runs, no sweep sends it.
        self.binder.sweep()
        self.assertEqual(1, len(self.nova.events()))

        # The lease runs out (the sender died, or Nova was down): the next
        # sweep delivers it, and after that it is no longer owed.
        self.execute(sa.update(ARQ).where(ARQ.c.uuid == arq_uuid).values(
            bind_lease_expires_at=datetime.datetime(2000, 1, 1)))
        self.binder.sweep()
        self.binder.sweep()

        self.assertEqual([arq_uuid, arq_uuid],
                         [event['tag'] for event in self.nova.events()])
        self.assertEqual('completed', self.nova.events()[1]['status'])

    def test_an_event_owed_by_a_later_bind_stays_owed(self):
        arq_uuid = self.make_arq(self.providers[0])
        recording_send = self.nova.send_events

        def rebound_meanwhile(events):
            # While Nova is told of this bind, the ARQ is unbound, bound
            # again and that bind ends: its event is owed, not yet leased.
            self.execute(sa.update(ARQ).where(ARQ.c.uuid == arq_uuid).values(
                state='Bound', bind_event_pending=True, bind_owner=None,
                bind_lease_expires_at=None))
            return recording_send(events)

        self.nova.send_events = rebound_meanwhile
        self.binder.bind([arq_uuid])
        self.nova.send_events = recording_send

        self.assertTrue(self.arq_row(arq_uuid).bind_event_pending)
        self.binder.sweep()
        self.assertEqual([arq_uuid, arq_uuid],
                         [event['tag'] for event in self.nova.events()])
        self.assertIsNone(self.arq_row(arq_uuid).bind_event_pending)

    def test_sweep_sends_events_owed_to_instances_done_binding(self):
        instance = uuidutils.generate_uuid()
        first = self.make_arq(self.providers[0], instance)
        second = self.make_arq(self.providers[3], instance)
        self.binder.bind([first])
        # The other ARQ leaves BindStarted without the binder (deleted).
        self.execute(sa.delete(ARQ).where(ARQ.c.uuid == second))

        self.binder.sweep()

        self.assertEqual([[{'name': 'accelerator-request-bound',
                            'server_uuid': instance, 'tag': first,
                            'status': 'completed'}]], self.nova.sent)


class SQLiteFinishOutcomeTests(FinishOutcomeTests, base.TestCase):
    pass


class SQLiteNovaEventTests(NovaEventTests, base.TestCase):
    pass
