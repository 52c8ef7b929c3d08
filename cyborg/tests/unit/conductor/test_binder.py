"""The conductor's binder: its agent calls, its threads and its sweep.

The fixture (``test_bind_transactions.BindingTestsBase``) is a real agent
with the fake driver over the fake:// transport, and a recorder of the
events the binder sends in place of Nova.
"""

import dataclasses
import datetime
import threading
import time

import fixtures
import sqlalchemy as sa
from oslo_utils import timeutils
from oslo_utils import uuidutils

from cyborg import rpc
from cyborg.agent import manager as agent_manager
from cyborg.agent import rpcapi as agent_rpcapi
from cyborg.agent.drivers import fake
from cyborg.conductor import arqs
from cyborg.conductor import binder as conductor_binder
from cyborg.conductor import bind_transactions
from cyborg.conductor import inventory_report
from cyborg.tests import base
from cyborg.tests.unit.conductor import recording_binder
from cyborg.tests.unit.conductor import test_bind_transactions as cases
from cyborg.tests.unit.db import records
from cyborg.tests.unit.objects import test_list_statement_counts

HOST = cases.HOST
ARQ = cases.ARQ
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
        self.assertGreaterEqual(gaps[0], conductor_binder.RETRY_DELAY)
        self.assertGreaterEqual(gaps[1], 2 * conductor_binder.RETRY_DELAY)
        self.assertLess(gaps[1], 2 * conductor_binder.RETRY_DELAY + 1)

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

        binder._prepare(HOST, [work()])
        binder._prepare(HOST, [work(), work(uuidutils.generate_uuid())])

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


class RecoveryTests(cases.BindingTestsBase):
    """Recorded binds are finished by whichever binder is alive."""

    def age(self, arq_uuid, seconds):
        past = datetime.datetime.utcnow() - datetime.timedelta(seconds=seconds)
        self.execute(sa.update(ARQ).where(ARQ.c.uuid == arq_uuid).values(
            updated_at=past))

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

    def test_stop_releases_the_leases_of_unfinished_work(self):
        arq_uuid = self.make_arq(self.providers[0])
        # Work this binder holds but has not finished when it stops.
        self.claim([arq_uuid], self.binder.owner)
        self.binder._active[arq_uuid] += 1
        self.binder.start()

        self.binder.stop()

        self.assertIsNone(self._owner(arq_uuid))
        self.assertEqual('BindStarted', self.arq(arq_uuid).state)
        # The next binder takes it over at once, with the handle chosen.
        successor = self.make_binder('conductor-1')
        successor.start()
        self.assertTrue(wait_for(lambda: self.states([arq_uuid])
                                 == ['Bound']))
        self.assertEqual(1, self.handles_in_use())

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
        binder._active[working] += 1

        binder.start()
        self.assertTrue(entered.wait(10))
        first = self._lease(working)
        # Two renewals' time, the sweep still waiting for Nova.
        time.sleep(2.5)

        self.assertEqual(binder.owner, self._owner(working))
        self.assertGreater(self._lease(working), first)

    def _lease(self, arq_uuid):
        with self.database.engine.connect() as connection:
            return connection.execute(sa.select(
                ARQ.c.bind_lease_expires_at).where(
                ARQ.c.uuid == arq_uuid)).scalar()

    def _owner(self, arq_uuid):
        with self.database.engine.connect() as connection:
            return connection.execute(sa.select(ARQ.c.bind_owner).where(
                ARQ.c.uuid == arq_uuid)).scalar()


class RecordedClaimTests(cases.BindingTestsBase):
    """The transaction that records a bind (``arqs.bind``) claims it for
    the binder: after its commit the binder's work starts with the agent
    call."""

    def record(self, binder, rp_uuid):
        """An Initial ARQ bound to ``rp_uuid`` through ``arqs.bind``; its
        uuid, the commits and the statements the bind made."""
        arq_uuid = records.make_arq(self.context, self.profile,
                                    project_id='project-1').uuid
        commits = []
        committed = commits.append
        sa.event.listen(self.database.engine, 'commit', committed)
        try:
            with test_list_statement_counts.counting_statements(
                    self.database.engine) as statements:
                arqs.bind(self.context, binder, {arq_uuid: {
                    'hostname': HOST, 'device_rp_uuid': rp_uuid,
                    'instance_uuid': uuidutils.generate_uuid()}})
        finally:
            sa.event.remove(self.database.engine, 'commit', committed)
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
        self.assertEqual({}, dict(binder._active))
        # The next binder takes it over at once, with the handle chosen.
        successor = self.make_binder('conductor-3')
        successor.start()
        self.assertTrue(wait_for(lambda: self.states([queued])
                                 == ['Bound']))
        self.assertEqual(row.attach_handle_id,
                         self.arq_row(queued).attach_handle_id)


class SQLitePrepareOutcomeTests(PrepareOutcomeTests, base.TestCase):
    pass


class SQLiteRetryTests(RetryTests, base.TestCase):
    pass


class SQLiteRecoveryTests(RecoveryTests, base.TestCase):
    pass


class SQLiteRecordedClaimTests(RecordedClaimTests, base.TestCase):
    pass
