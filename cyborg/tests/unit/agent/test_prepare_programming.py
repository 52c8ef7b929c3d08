"""prepare_arqs loading a bitstream, and release_arqs, at the agent.

Calls go through the agent RPC client and the fake:// transport to a real
AgentManager with the fake driver, as the conductor's binder and releaser
make them; Glance is ``cyborg.tests.fixtures.glance``.
"""

import datetime
import os
import threading
import uuid

import fixtures

from cyborg import conf
from cyborg import context as cyborg_context
from cyborg.agent import manager
from cyborg.agent import preparing
from cyborg.agent import rpcapi
from cyborg.agent.drivers import fake
from cyborg.clients import glance as glance_client
from cyborg.tests import base
from cyborg.tests.fixtures import glance as glance_fixture
from cyborg.tests.fixtures import messaging
from cyborg.tests.unit.agent import test_program

HOST = 'compute-1'
# Card 0: a region whose two VFs stay when programmed; card 1: a region
# whose programming leaves one VF (its second handle goes); card 2: its
# programming fails.
FLEET = """
fpgas:
  - {vendor: "0x8086", vendor_name: intel, board: pac_arria10,
     regions: [{vfs_per_pf: 2}]}
  - {vendor: "0x8086", vendor_name: intel, board: pac_arria10,
     regions: [{vfs_per_pf: 2, program: {topology_after: {
       pf: [{name: pf_1, vf: [{name: vf_1}]}]}}}]}
  - {vendor: "0x8086", vendor_name: intel, board: pac_arria10,
     regions: [{vfs_per_pf: 2, program: {result: invalid_bitstream}}]}
"""
LATER = datetime.datetime(2030, 1, 1, 12, 0, 0)
EARLIER = LATER - datetime.timedelta(seconds=5)


def arq(uuid_, card, function=0, bitstream_id=None, taken_at=LATER):
    """What the binder sends for VF ``function`` of card ``card``."""
    bus = '%02x' % (0x10 + card)
    return {'uuid': uuid_, 'driver_name': 'fake_driver',
            'deployable_name': 'fpga-0000:%s:00.0-region0' % bus,
            'attach_type': 'TEST_PCI',
            'attach_info': {'domain': '0000', 'bus': bus, 'device': '01',
                            'function': str(function)},
            'request_group': {'resources:FPGA': '1'},
            'hold': {'arq': uuid_, 'taken_at': taken_at.isoformat()},
            'bitstream_id': bitstream_id}


class PrepareProgrammingTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.messaging = self.useFixture(messaging.Messaging(conf.CONF))
        self.useFixture(glance_fixture.GlanceFixture())
        self.files = self.useFixture(fixtures.TempDir()).path
        self.tmp = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(self.files, 'fleet.yaml')
        with open(path, 'w') as stream:
            stream.write(FLEET)
        self.driver = fake.FakeDriver(path, host=HOST)
        self.agent = manager.AgentManager(host=HOST, driver_names=[])
        self.agent.drivers = {'fake_driver': self.driver}
        self.messaging.serve(rpcapi.TOPIC, HOST, [self.agent])
        self.client = rpcapi.AgentAPI()
        self.context = cyborg_context.get_admin_context()
        self.image = self._image()
        # Only the agent's downloads from here on.
        self.useFixture(fixtures.MonkeyPatch('tempfile.tempdir', self.tmp))

    def loaded(self):
        """What a region loaded with ``self.image`` answers it holds."""
        return {'prepared': True, 'reason': None,
                'readback': {'bitstream_id': self.image,
                             'function_id': self.function_id}}

    def _image(self):
        self.function_id = uuid.uuid4().hex
        path = os.path.join(self.files, 'bitstream.gbs')
        with open(path, 'wb') as stream:
            stream.write(test_program.DATA)
        properties = {'bs-name': 'aes', 'bs-uuid': str(uuid.uuid4()),
                      'vendor': 'intel', 'board': 'pac_arria10',
                      'version': '1', 'driver_ver': '1',
                      'driver_path': '/opt',
                      'function_uuid': str(uuid.UUID(self.function_id))}
        return glance_client.GlanceClient(conf.CONF).upload(
            path, 'aes', properties, ['FPGA'])['id']

    def prepare(self, *arqs):
        return self.client.prepare_arqs(self.context, HOST, list(arqs),
                                        timeout=30)

    def release(self, *arqs):
        return self.client.release_arqs(self.context, HOST, list(arqs),
                                        timeout=30)

    def downloads(self):
        return [name for name in os.listdir(self.tmp)
                if name.startswith('cyborg-program-')]

    def test_the_bitstream_is_downloaded_loaded_and_removed(self):
        conductor = self.agent.conductor = test_program.RecordingConductor()
        self.flags(report_interval=3600, group='agent')
        self.agent.start_periodic_tasks()
        self.addCleanup(self.agent.stop_periodic_tasks)
        self.assertEqual(1, conductor.wait_for(1))

        answer = self.prepare(arq('a', 0, bitstream_id=self.image))

        self.assertEqual({'a': self.loaded()}, answer)
        self.assertEqual([('fpga-0000:10:00.0-region0', self.image)],
                         self.driver.programs)
        self.assertEqual([], self.downloads())
        # The new function reaches the conductor soon.
        self.assertEqual(2, conductor.wait_for(2))

    def test_loading_is_logged_when_it_starts_and_when_it_ends(self):
        logger = self.useFixture(fixtures.FakeLogger(level='INFO'))

        self.prepare(arq('a', 0, bitstream_id=self.image))

        lines = [line for line in logger.output.splitlines()
                 if 'image %s into deployable' % self.image in line]
        self.assertEqual(
            ['Loading image %s into deployable fpga-0000:10:00.0-region0 '
             'for ARQ a' % self.image,
             'Loaded image %s into deployable fpga-0000:10:00.0-region0 '
             'for ARQ a' % self.image], lines)

    def test_an_image_that_cannot_be_downloaded_fails_the_arq(self):
        missing = str(uuid.uuid4())

        answer = self.prepare(arq('a', 0, bitstream_id=missing))

        self.assertFalse(answer['a']['prepared'])
        self.assertIn('image %s cannot be loaded' % missing,
                      answer['a']['reason'])
        self.assertEqual([], self.driver.programs)
        self.assertEqual([], self.downloads())

    def test_a_refused_bitstream_fails_with_the_drivers_message(self):
        answer = self.prepare(arq('a', 2, bitstream_id=self.image))

        reason = answer['a']['reason']
        self.assertIn('(INVALID_BITSTREAM): simulated INVALID_BITSTREAM '
                      'programming image %s' % self.image, reason)
        self.assertNotIn(self.tmp, reason)

    def test_the_other_arqs_of_the_region_wait_for_the_bitstream(self):
        seen = []
        real_prepare = self.driver.prepare

        def recording(device, deployable, handle, group, **kwargs):
            seen.append((handle.attach_info['function'],
                         self.driver.loaded_bitstream(
                             device.controlpath_id, deployable.name)
                         is not None))
            return real_prepare(device, deployable, handle, group, **kwargs)

        self.driver.prepare = recording

        answer = self.prepare(arq('plain', 0, function=1),
                              arq('loading', 0, function=0,
                                  bitstream_id=self.image))

        self.assertEqual({'plain': {'prepared': True, 'reason': None},
                          'loading': self.loaded()},
                         answer)
        # The bitstream first, the other handle once it is loaded.
        self.assertEqual([('0', False), ('1', True)], seen)
        self.assertEqual(1, len(self.driver.programs))

    def test_a_handle_the_bitstream_removes_fails_its_arq_alone(self):
        answer = self.prepare(arq('gone', 1, function=1,
                                  bitstream_id=self.image),
                              arq('kept', 1, function=0))

        self.assertFalse(answer['gone']['prepared'])
        self.assertIn('no longer has attach handle', answer['gone']['reason'])
        self.assertEqual({'prepared': True, 'reason': None}, answer['kept'])
        self.assertNotIn('loaded', answer['gone'])

    def test_a_release_older_than_the_last_prepare_is_ignored(self):
        self.prepare(arq('old', 0, taken_at=EARLIER))
        self.prepare(arq('new', 0, taken_at=LATER))

        answer = self.release(arq('old', 0, taken_at=EARLIER))

        self.assertEqual([{'released': False, 'stale': True,
                           'reason': 'prepared for a later bind since'}],
                         answer)
        self.assertEqual([], self.driver.releases)
        self.assertEqual([{'released': True, 'stale': False,
                           'reason': None}],
                         self.release(arq('new', 0, taken_at=LATER)))
        self.assertEqual(1, len(self.driver.releases))

    def test_a_prepare_after_its_release_is_refused(self):
        self.release(arq('a', 0))

        answer = self.prepare(arq('a', 0))

        self.assertFalse(answer['a']['prepared'])
        self.assertIn('before the agent prepared it', answer['a']['reason'])

    def test_a_handle_this_host_does_not_report_is_released_quietly(self):
        answer = self.release(arq('a', 0, function=7))

        self.assertEqual([{'released': True, 'stale': False,
                           'reason': 'not reported by this host'}], answer)
        self.assertEqual([], self.driver.releases)

    # The binder asks again when a call or its answer was lost, or an ARQ
    # was still being prepared: the agent answers from what it did.

    def counted_prepares(self, gate=None):
        """The functions of the handles the driver prepares from now on;
        with ``gate`` (an Event), each prepare waits for it first."""
        prepared = []
        real_prepare = self.driver.prepare

        def counted(device, deployable, handle, group, **kwargs):
            prepared.append(handle.attach_info['function'])
            if gate is not None:
                gate.wait(10)
            return real_prepare(device, deployable, handle, group, **kwargs)

        self.driver.prepare = counted
        return prepared

    def test_a_repeated_prepare_is_answered_without_the_driver(self):
        prepared = self.counted_prepares()
        arqs = [arq('loading', 0, bitstream_id=self.image),
                arq('plain', 0, function=1)]

        first = self.prepare(*arqs)
        again = self.prepare(*arqs)

        self.assertEqual({'loading': self.loaded(),
                          'plain': {'prepared': True, 'reason': None}},
                         first)
        self.assertEqual(first, again)
        # Neither downloaded nor loaded again.
        self.assertEqual(['0', '1'], prepared)
        self.assertEqual(1, len(self.driver.programs))
        self.assertEqual([], self.downloads())

    def test_a_repeated_failed_prepare_gets_the_same_answer(self):
        first = self.prepare(arq('a', 2, bitstream_id=self.image))
        again = self.prepare(arq('a', 2, bitstream_id=self.image))

        self.assertFalse(first['a']['prepared'])
        self.assertEqual(first, again)
        self.assertEqual(1, len(self.driver.programs))

    def test_a_prepare_still_running_is_waited_for_not_started_again(self):
        gate = threading.Event()
        self.addCleanup(gate.set)
        prepared = self.counted_prepares(gate)

        early = self.client.prepare_arqs(self.context, HOST, [arq('a', 0)],
                                         timeout=2)
        answers = []
        asking = threading.Thread(
            target=lambda: answers.append(self.prepare(arq('a', 0))))
        asking.start()
        asking.join(1)
        waiting = asking.is_alive()
        gate.set()
        asking.join(10)

        self.assertEqual({'a': {'prepared': False, 'pending': True,
                                'reason': 'still preparing after 2 s'}},
                         early)
        self.assertTrue(waiting)
        self.assertEqual([{'a': {'prepared': True, 'reason': None}}],
                         answers)
        self.assertEqual(['0'], prepared)

    def test_a_later_bind_of_the_handle_is_prepared_again(self):
        prepared = self.counted_prepares()

        self.prepare(arq('a', 0, taken_at=EARLIER))
        answer = self.prepare(arq('a', 0, taken_at=LATER))

        self.assertEqual({'a': {'prepared': True, 'reason': None}}, answer)
        self.assertEqual(['0', '0'], prepared)

    def test_a_prepare_without_a_hold_is_always_done(self):
        # An older conductor names no hold: nothing tells its binds apart.
        prepared = self.counted_prepares()

        self.prepare(dict(arq('a', 0), hold=None))
        self.prepare(dict(arq('a', 0), hold=None))

        self.assertEqual(['0', '0'], prepared)


class HoldsTest(base.TestCase):

    def test_holds_order_by_the_time_the_handle_was_taken(self):
        holds = preparing.Holds()
        older = preparing.Hold(EARLIER, 'b')
        newer = preparing.Hold(LATER, 'a')
        holds.start_prepare('h', newer)

        self.assertFalse(holds.is_current('h', older))
        self.assertTrue(holds.is_current('h', newer))
        self.assertRaises(fake.base.PrepareFailed, holds.start_prepare, 'h',
                          older)
        # Without a hold (an older conductor), nothing is ordered.
        self.assertTrue(holds.is_current('h', None))
        self.assertIsNone(preparing.Hold.of(None))

    def test_a_finished_prepare_is_answered_again_until_released(self):
        holds = preparing.Holds()
        hold = preparing.Hold(LATER, 'a')

        self.assertIsNone(holds.start_prepare('h', hold))
        # Not finished: a second prepare of the hold is not answered yet.
        self.assertIsNone(holds.start_prepare('h', hold))
        holds.prepared('h', hold, {'prepared': True, 'reason': None})
        answer = holds.start_prepare('h', hold)
        answer['reason'] = 'changed by a caller'

        self.assertEqual({'prepared': True, 'reason': None},
                         holds.start_prepare('h', hold))
        holds.released('h', hold)
        self.assertRaises(fake.base.PrepareFailed, holds.start_prepare, 'h',
                          hold)
