"""The agent call of a bind batch (``cyborg.conductor.agent_calls``), as
the binder makes it: what each answer, or its absence, ends in, and the
calls made again.

The fixture (``test_bind_transactions.BindingTestsBase``) is a real agent
with the fake driver over the fake:// transport, and a recorder of the
events the binder sends in place of Nova.
"""

import dataclasses
import datetime
import threading
import time

import sqlalchemy as sa
from oslo_utils import timeutils
from oslo_utils import uuidutils

from cyborg import rpc
from cyborg.agent import manager as agent_manager
from cyborg.agent import rpcapi as agent_rpcapi
from cyborg.agent.drivers import fake
from cyborg.conductor import agent_calls
from cyborg.conductor import binder as conductor_binder
from cyborg.conductor import bind_transactions
from cyborg.conductor import inventory_report
from cyborg.tests import base
from cyborg.tests.unit.conductor import test_bind_transactions as cases

HOST = cases.HOST
Deployable = cases.Deployable
Device = cases.Device
wait_for = cases.wait_for


class PrepareOutcomeTests(cases.BindingTestsBase):
    """What the agent calls of a batch end in."""

    def test_agent_that_does_not_answer_fails_at_bind_timeout(self):
        self.binder = self.make_binder('conductor-1', bind_timeout=2)
        arq_uuid = self.make_arq(self.providers[2])
        started = time.monotonic()

        self.assertEqual({arq_uuid: 'BindFailed'},
                         self.binder.bind([arq_uuid]))

        self.assertLess(time.monotonic() - started, 6)
        self.assertEqual(0, self.handles_in_use())
        self.assertEqual('failed', self.nova.events()[0]['status'])

    def test_agent_gone_silent_fails_at_bind_timeout(self):
        self.binder = self.make_binder('conductor-1', bind_timeout=2)
        real_prepare_arqs = self.agent.prepare_arqs

        def silent(context, arqs, timeout=None):
            # An agent that does not keep to the time it was given.
            time.sleep(timeout + 1)
            return real_prepare_arqs(context, arqs)

        silent.exposed = True
        self.agent.prepare_arqs = silent
        arq_uuid = self.make_arq(self.providers[0])

        self.assertEqual({arq_uuid: 'BindFailed'},
                         self.binder.bind([arq_uuid]))
        self.assertEqual(0, self.handles_in_use())

    def test_a_hanging_device_fails_only_its_own_arq(self):
        self.binder = self.make_binder('conductor-1', bind_timeout=3)
        instance = uuidutils.generate_uuid()
        good = self.make_arq(self.providers[0], instance)
        hanging = self.make_arq(self.providers[2], instance)

        self.assertEqual({good: 'Bound', hanging: 'BindFailed'},
                         self.binder.bind([good, hanging]))

    def test_a_silent_host_does_not_fail_the_arqs_of_another(self):
        # A second agent, on a host that sorts first, that answers only
        # after the bind's time is up; each agent is asked once.
        self.binder = self.make_binder('conductor-1', bind_timeout=3)
        other = 'compute-0'
        other_driver = fake.FakeDriver(self.driver._inventory_path,
                                       host=other)
        other_agent = agent_manager.AgentManager(host=other, driver_names=[])
        other_agent.drivers = {'fake_driver': other_driver}
        inventory_report.apply(self.context, other,
                               other_agent.collect_inventory())
        calls = {HOST: 0, other: 0}
        real_prepare_arqs = self.agent.prepare_arqs

        def counted(context, arqs, timeout=None):
            calls[HOST] += 1
            return real_prepare_arqs(context, arqs, timeout=timeout)

        def silent(context, arqs, timeout=None):
            calls[other] += 1
            time.sleep(timeout + 1)
            return {}

        counted.exposed = silent.exposed = True
        self.agent.prepare_arqs = counted
        other_agent.prepare_arqs = silent
        self.messaging.serve(agent_rpcapi.TOPIC, other, [other_agent])
        with self.database.engine.connect() as connection:
            other_rp = connection.execute(sa.select(Deployable.c.rp_uuid).join(
                Device, Device.c.id == Deployable.c.device_id).where(
                Device.c.hostname == other,
                Deployable.c.rp_uuid.is_not(None)).order_by(
                Deployable.c.id)).scalars().first()
        instance = uuidutils.generate_uuid()
        here = [self.make_arq(self.providers[0], instance) for _ in range(2)]
        there = [self.make_arq(other_rp, instance, hostname=other)
                 for _ in range(2)]

        ended = self.binder.bind(here + there)

        self.assertEqual(dict.fromkeys(here, 'Bound')
                         | dict.fromkeys(there, 'BindFailed'), ended)
        self.assertEqual({HOST: 1, other: 1}, calls)
        self.assertEqual(2, self.handles_in_use())


class RefusingBus:
    """The agents' client over a message bus that refuses the first
    ``refusals`` calls (None: every call), as cyborg.rpc does when no agent
    listens; it records each call's time, timeout and ARQs."""

    def __init__(self, refusals=None):
        self.refusals = refusals
        self.calls = []
        self._agents = agent_rpcapi.AgentAPI()

    def prepare_arqs(self, context, host, arqs, timeout=None):
        self.calls.append((time.monotonic(), timeout,
                           sorted(arq['uuid'] for arq in arqs)))
        if self.refusals is None or len(self.calls) <= self.refusals:
            raise rpc.ServerNotListening(topic=agent_rpcapi.TOPIC)
        return self._agents.prepare_arqs(context, host, arqs,
                                         timeout=timeout)


class RecordingAgents:
    """Agents that prepare everything at once, recording each call's
    timeout."""

    def __init__(self):
        self.timeouts = []

    def prepare_arqs(self, context, host, arqs, timeout=None):
        self.timeouts.append(timeout)
        return {arq['uuid']: {'prepared': True, 'reason': None}
                for arq in arqs}


class RetryTests(cases.BindingTestsBase):
    """A prepare call lost, refused or answered too early is made again
    while bind time remains; the agent does the work once."""

    def make_binder_with(self, agents, **settings):
        binder = conductor_binder.Binder(
            'conductor-1', dataclasses.replace(cases.SETTINGS, **settings),
            nova=lambda: self.nova, agents=agents)
        self.addCleanup(binder.stop)
        return binder

    def count_driver_prepares(self):
        """The handles the driver is asked to prepare, from now on."""
        prepared = []
        real_prepare = self.driver.prepare

        def counted(device, deployable, handle, *args, **kwargs):
            prepared.append(handle.attach_info)
            return real_prepare(device, deployable, handle, *args, **kwargs)

        self.driver.prepare = counted
        return prepared

    def test_a_call_whose_answer_was_lost_is_made_again(self):
        self.binder = self.make_binder('conductor-1', bind_timeout=15,
                                       prepare_call_timeout=2)
        prepared = self.count_driver_prepares()
        real_prepare_arqs = self.agent.prepare_arqs
        calls = []

        def answer_lost(context, arqs, timeout=None):
            calls.append(timeout)
            answer = real_prepare_arqs(context, arqs, timeout=timeout)
            if len(calls) == 1:
                # As in a broker restart: the binder never gets this answer.
                time.sleep(timeout + 0.5)
            return answer

        answer_lost.exposed = True
        self.agent.prepare_arqs = answer_lost
        instance = uuidutils.generate_uuid()
        arq_uuids = [self.make_arq(self.providers[0], instance)
                     for _ in range(2)]
        started = time.monotonic()

        self.assertEqual(dict.fromkeys(arq_uuids, 'Bound'),
                         self.binder.bind(arq_uuids))

        # Each call bounded by prepare_call_timeout, not the bind's 15 s;
        # the second answered from what the first did.
        self.assertEqual([2, 2], calls)
        self.assertLess(time.monotonic() - started, 6)
        self.assertEqual(2, len(prepared))
        self.assertEqual(2, self.handles_in_use())
        self.assertEqual(['completed'] * 2,
                         [event['status'] for event in self.nova.events()])

    def test_a_call_the_bus_refused_is_made_again_after_a_backoff(self):
        bus = RefusingBus(refusals=2)
        binder = self.make_binder_with(bus, bind_timeout=15,
                                       prepare_call_timeout=3)
        instance = uuidutils.generate_uuid()
        arq_uuids = sorted(self.make_arq(self.providers[0], instance)
                           for _ in range(2))

        self.assertEqual(dict.fromkeys(arq_uuids, 'Bound'),
                         binder.bind(arq_uuids))

        # One call per attempt for both ARQs of the host, each bounded by
        # prepare_call_timeout, 0.5 s then 1 s apart.
        self.assertEqual([(3, arq_uuids)] * 3,
                         [call[1:] for call in bus.calls])
        gaps = [bus.calls[index + 1][0] - bus.calls[index][0]
                for index in range(2)]
        self.assertGreaterEqual(gaps[0], agent_calls.RETRY_DELAY)
        self.assertGreaterEqual(gaps[1], 2 * agent_calls.RETRY_DELAY)
        self.assertLess(gaps[1], 2 * agent_calls.RETRY_DELAY + 1)

    def test_refused_calls_fail_the_bind_at_bind_timeout_not_before(self):
        bus = RefusingBus()
        binder = self.make_binder_with(bus, bind_timeout=3)
        arq_uuid = self.make_arq(self.providers[0])
        started = time.monotonic()

        self.assertEqual({arq_uuid: 'BindFailed'}, binder.bind([arq_uuid]))

        waited = time.monotonic() - started
        self.assertGreaterEqual(waited, 2.9)
        self.assertLess(waited, 4)
        # Backoff 0.5, 1, 2 s: no busy loop while the bus is away.
        self.assertLessEqual(len(bus.calls), 4)
        self.assertIn('could not be reached within bind_timeout',
                      self.arq_row(arq_uuid).state_reason)
        self.assertEqual(0, self.handles_in_use())

    def test_an_arq_still_being_prepared_is_waited_for_not_redone(self):
        self.binder = self.make_binder('conductor-1', bind_timeout=15,
                                       prepare_call_timeout=2)
        prepared = self.count_driver_prepares()
        slow = threading.Event()
        counted_prepare = self.driver.prepare

        def slow_prepare(*args, **kwargs):
            slow.wait(10)
            return counted_prepare(*args, **kwargs)

        self.driver.prepare = slow_prepare
        real_prepare_arqs = self.agent.prepare_arqs
        calls = []

        def counted_calls(context, arqs, timeout=None):
            calls.append(len(arqs))
            return real_prepare_arqs(context, arqs, timeout=timeout)

        counted_calls.exposed = True
        self.agent.prepare_arqs = counted_calls
        # Longer than one call: the first answers the ARQ as pending.
        timer = threading.Timer(3, slow.set)
        timer.start()
        self.addCleanup(timer.cancel)
        arq_uuid = self.make_arq(self.providers[0])

        self.assertEqual({arq_uuid: 'Bound'}, self.binder.bind([arq_uuid]))

        self.assertGreaterEqual(len(calls), 2)
        self.assertEqual(1, len(prepared))

    def test_a_hanging_prepare_fails_at_bind_timeout(self):
        self.binder = self.make_binder('conductor-1', bind_timeout=4,
                                       prepare_call_timeout=2)
        arq_uuid = self.make_arq(self.providers[2])
        started = time.monotonic()

        self.assertEqual({arq_uuid: 'BindFailed'},
                         self.binder.bind([arq_uuid]))

        self.assertGreaterEqual(time.monotonic() - started, 3.9)
        self.assertIn('was still preparing it when bind_timeout passed',
                      self.arq_row(arq_uuid).state_reason)

    def test_a_call_that_programs_has_the_rest_of_the_bind_time(self):
        agents = RecordingAgents()
        binder = self.make_binder_with(agents, bind_timeout=60,
                                       prepare_call_timeout=5)
        now = timeutils.utcnow()

        def work(bitstream_id=None):
            return bind_transactions.Work(
                arq_id=1, uuid=uuidutils.generate_uuid(), hostname=HOST,
                instance_uuid=uuidutils.generate_uuid(), started_at=now,
                deadline=now + datetime.timedelta(seconds=60),
                attach_handle_taken_at=now, bitstream_id=bitstream_id)

        binder.agent_calls.prepare(HOST, [work()])
        binder.agent_calls.prepare(HOST, [work(),
                                          work(uuidutils.generate_uuid())])

        self.assertEqual([5, 60], agents.timeouts)

    def test_a_stopping_binder_leaves_the_bind_to_the_next(self):
        bus = RefusingBus()
        binder = self.make_binder_with(bus, bind_timeout=60)
        arq_uuid = self.make_arq(self.providers[0])
        binder.start()
        binder.submit([arq_uuid])
        self.assertTrue(wait_for(lambda: bus.calls))

        started = time.monotonic()
        binder.stop()

        self.assertLess(time.monotonic() - started, 5)
        row = self.arq_row(arq_uuid)
        self.assertEqual(('BindStarted', None),
                         (row.state, row.bind_owner))


class SQLitePrepareOutcomeTests(PrepareOutcomeTests, base.TestCase):
    pass


class SQLiteRetryTests(RetryTests, base.TestCase):
    pass
