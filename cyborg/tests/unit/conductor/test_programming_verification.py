"""What the conductor does with an agent's verified (or suspect) load.

A program call records the image the region reported; a failure whose
answer says the region is suspect, or an agent that did not answer, marks
the region degraded in the transaction of the failure, with a history
entry saying why, and brings Placement in step. A bind does the same from
the agents' prepare answers (``bind_programming.outcomes`` and
``degraded``, applied by ``bind_finishing.record_outcomes``). Real
database and Glance; the agent is scripted (``test_programming``).
"""

import datetime

import fixtures
import oslo_messaging
from oslo_utils import timeutils

from cyborg import conf
from cyborg import context as cyborg_context
from cyborg.clients import glance as glance_client
from cyborg.common import vocabulary
from cyborg.conductor import agent_calls
from cyborg.conductor import bind_finishing
from cyborg.conductor import bind_programming
from cyborg.conductor import bind_transactions
from cyborg.conductor import placement_sync
from cyborg.conductor import programming
from cyborg.db.queries import deployables as deployable_queries
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.fixtures import glance as glance_fixture
from cyborg.tests.unit.conductor import test_history
from cyborg.tests.unit.conductor import test_programming
from cyborg.tests.unit.db import records

Result = vocabulary.ProgramResult
Health = vocabulary.Health
ScriptedAgents = test_programming.ScriptedAgents
MISMATCH = ('verification failed: the region reports function 1234, not '
            'image x (function y)')


class VerifiedProgramTest(base.TestCase):

    _image = test_programming.ProgrammerTest._image
    _row = test_programming.ProgrammerTest._row
    _entries = test_history.ProgramHistoryTests._entries

    def setUp(self):
        super().setUp()
        self.useFixture(database.Database('sqlite'))
        self.useFixture(glance_fixture.GlanceFixture())
        self.context = cyborg_context.get_admin_context()
        self.device = records.make_device(
            self.context, vendor='0x8086', hostname='compute-1',
            vendor_board_info='{"board": "pac_arria10"}')
        self.deployable = records.make_deployable(self.context, self.device)
        self.image_id = self._image()
        self.synced = []
        self.useFixture(fixtures.MonkeyPatch(
            'cyborg.conductor.placement_sync.sync_host',
            lambda context, placement, host: self.synced.append(
                (placement, host))))

    def _program(self, answer):
        programmer = programming.Programmer(
            'conductor-1', programming.ProgramSettings(timeout=30),
            ScriptedAgents(answer),
            glance_for=lambda context: glance_client.GlanceClient(
                conf.CONF, context),
            placement_for=lambda: 'placement')
        return programmer.program(self.context, self.deployable.uuid,
                                  self.image_id)

    def test_the_image_the_region_reports_is_recorded(self):
        deployable = self._program({
            'code': 0, 'message': 'loaded',
            'loaded': {'bitstream_id': self.image_id, 'function_id': 'f'}})

        self.assertEqual(self.image_id, deployable.bitstream_id)
        self.assertEqual(Health.HEALTHY, self._row().health)
        self.assertEqual([], self.synced)

    def test_a_suspect_failure_degrades_the_region(self):
        deployable_queries.update(self.context, self.deployable.uuid,
                                  {'bitstream_id': 'old-image'})

        error = self.assertRaises(
            programming.ProgrammingFailed, self._program,
            {'code': int(Result.FAILED), 'message': MISMATCH,
             'suspect': True})

        self.assertEqual(502, error.code)
        row = self._row()
        self.assertEqual((None, None, Health.DEGRADED),
                         (row.bitstream_id, row.programming_owner,
                          row.health))
        self.assertIn(MISMATCH, row.health_reason)
        self.assertIsNotNone(row.health_since)
        program, health = self._entries()
        self.assertEqual([('program', 'failed'), ('health', 'ok')],
                         [(entry['event'], entry['outcome'])
                          for entry in (program, health)])
        self.assertIn(MISMATCH, program['reason'])
        self.assertEqual(('degraded: ' + MISMATCH, 'compute-1'),
                         (health['reason'], health['agent']))
        # Placement stops offering it now, not at the host's next report.
        self.assertEqual([('placement', 'compute-1')], self.synced)

    def test_an_agent_that_does_not_answer_degrades_the_region(self):
        self.assertRaises(programming.AgentTimeout, self._program,
                          oslo_messaging.MessagingTimeout('late'))

        self.assertEqual(Health.DEGRADED, self._row().health)
        self.assertEqual([('placement', 'compute-1')], self.synced)

    def test_failures_that_left_the_region_alone_do_not(self):
        # Glance could not be reached (no suspect), or the host refused.
        for answer, error in (
                ({'code': int(Result.FAILED), 'message': 'no Glance'},
                 programming.ProgrammingFailed),
                ({'code': int(Result.INVALID_BITSTREAM), 'message': 'no',
                  'suspect': True}, programming.BitstreamRejected)):
            with self.subTest(answer=answer):
                self.assertRaises(error, self._program, answer)
                self.assertEqual(Health.HEALTHY, self._row().health)
        self.assertEqual([], self.synced)

    def test_placement_trouble_is_logged_not_raised(self):
        def broken(context, placement, host):
            raise RuntimeError('placement is down')
        self.useFixture(fixtures.MonkeyPatch(
            'cyborg.conductor.placement_sync.sync_host', broken))
        logger = self.useFixture(fixtures.FakeLogger())

        self.assertRaises(programming.ProgrammingFailed, self._program,
                          {'code': 1, 'message': MISMATCH, 'suspect': True})

        self.assertEqual(Health.DEGRADED, self._row().health)
        self.assertIn('the next report of host compute-1 tells it',
                      logger.output)
        self.assertIs(placement_sync.sync_host, broken)


def work(uuid, deployable_id, bitstream_id):
    now = datetime.datetime(2030, 1, 1)
    return bind_transactions.Work(
        arq_id=1, uuid=uuid, hostname='compute-1', instance_uuid='i',
        started_at=now, deadline=now, deployable_id=deployable_id,
        bitstream_id=bitstream_id)


def answered(item, answer):
    return item.answered('compute-1', {item.uuid: answer})


class BindVerificationTest(base.TestCase):

    def test_the_reported_image_or_the_asked_one_is_recorded(self):
        items = [work('a', 1, 'image-a'), work('b', 2, 'image-b'),
                 work('c', 3, 'image-c'), work('d', 4, None)]
        decisions = [
            answered(items[0], {'prepared': True, 'readback': {
                'bitstream_id': 'image-a', 'function_id': 'f'}}),
            # A driver that cannot read back: what was asked.
            answered(items[1], {'prepared': True}),
            answered(items[2], {'prepared': False, 'reason': MISMATCH,
                                'suspect': True}),
            answered(items[3], {'prepared': True})]

        self.assertEqual({1: 'image-a', 2: 'image-b', 3: None},
                         bind_programming.outcomes(items, decisions))
        self.assertEqual({3: MISMATCH},
                         bind_programming.degraded(items, decisions))

    def test_a_failure_that_is_not_suspect_degrades_nothing(self):
        item = work('a', 1, 'image-a')
        decision = answered(item, {'prepared': False, 'reason': 'no Glance'})

        self.assertEqual({}, bind_programming.degraded([item], [decision]))
        self.assertEqual({1: None},
                         bind_programming.outcomes([item], [decision]))


class SilentAgents:
    """Agents whose prepare calls time out (``error``, an exception)."""

    def __init__(self, error):
        self.error = error
        self.calls = 0

    def prepare_arqs(self, context, host, arqs, timeout=None):
        self.calls += 1
        raise self.error


class BindTimeoutTest(base.TestCase):

    def prepare(self, error):
        now = timeutils.utcnow()
        items = [bind_transactions.Work(
            arq_id=index, uuid='arq-%d' % index, hostname='compute-1',
            instance_uuid='i', started_at=now,
            deadline=now + datetime.timedelta(seconds=1.5),
            deployable_id=index, bitstream_id=image)
            for index, image in enumerate(('image-a', None))]
        calls = agent_calls.AgentCalls(
            cyborg_context.get_admin_context(), 1, SilentAgents(error))
        return items, calls.prepare('compute-1', items)

    def test_a_region_being_loaded_when_time_ran_out_is_suspect(self):
        items, decisions = self.prepare(
            oslo_messaging.MessagingTimeout('late'))

        self.assertEqual([('failed', True), ('failed', False)],
                         [(decision.outcome, decision.suspect)
                          for decision in decisions])
        self.assertIn('did not answer within bind_timeout',
                      decisions[0].reason)
        self.assertEqual({0: decisions[0].reason},
                         bind_programming.degraded(items, decisions))

    def test_calls_the_bus_refused_leave_the_region_alone(self):
        _, decisions = self.prepare(
            oslo_messaging.MessageDeliveryFailure('no agent listens'))

        self.assertEqual([False, False],
                         [decision.suspect for decision in decisions])


class RecordDegradedTest(base.TestCase):

    def test_record_outcomes_marks_the_regions_degraded(self):
        self.database = self.useFixture(database.Database('sqlite'))
        context = cyborg_context.get_admin_context()
        device = records.make_device(context, hostname='compute-1')
        deployable = records.make_deployable(context, device)
        other = records.make_deployable(context, device, name='other')

        bind_finishing.record_outcomes(
            context, [], 'binder-1', datetime.datetime(2030, 1, 1),
            datetime.timedelta(seconds=60), degraded={deployable.id: MISMATCH})

        rows = {uuid: deployable_queries.get_by_uuid(context, uuid)[0]
                for uuid in (deployable.uuid, other.uuid)}
        self.assertEqual((Health.DEGRADED, MISMATCH),
                         (rows[deployable.uuid].health,
                          rows[deployable.uuid].health_reason))
        self.assertEqual(Health.HEALTHY, rows[other.uuid].health)
        [entry] = test_history.entries(self.database.engine)
        self.assertEqual(('health', 'ok', 'degraded: ' + MISMATCH,
                          deployable.uuid, 'compute-1'),
                         (entry['event'], entry['outcome'], entry['reason'],
                          entry['deployable_uuid'], entry['agent']))
        # Degraded again: no change, no entry.
        bind_finishing.record_outcomes(
            context, [], 'binder-1', datetime.datetime(2030, 1, 1),
            datetime.timedelta(seconds=60), degraded={deployable.id: 'again'})
        self.assertEqual(1, len(test_history.entries(self.database.engine)))
