"""The agent's program endpoint: download from a real Glance, the driver, cleanup.

Calls go through the agent RPC client and the fake:// transport to a real
AgentManager with the fake driver, as the conductor makes them; Glance is
``cyborg.tests.fixtures.glance``.
"""

import os
import threading
import time
import uuid

import fixtures

from cyborg.common import vocabulary
from cyborg import conf
from cyborg import context as cyborg_context
from cyborg.agent import manager
from cyborg.agent import rpcapi
from cyborg.agent.drivers import fake
from cyborg.clients import glance as glance_client
from cyborg.tests import base
from cyborg.tests.fixtures import glance as glance_fixture
from cyborg.tests.fixtures import messaging

HOST = 'compute-1'
FLEET = """
fpgas:
  - vendor: "0x8086"
    vendor_name: intel
    board: pac_arria10
    regions:
      - program: {result: success}
"""
REGION = 'fpga-0000:10:00.0-region0'
DATA = b'\x01bitstream' * 1000


class RecordingConductor:
    """Stands in for the agent's ConductorAPI: counts inventory reports."""

    def __init__(self):
        self.reports = 0
        self.reported = threading.Condition()

    def report_inventory(self, context, host, devices, timeout=None):
        with self.reported:
            self.reports += 1
            self.reported.notify_all()

    def wait_for(self, count, timeout=10):
        deadline = time.monotonic() + timeout
        with self.reported:
            while self.reports < count and time.monotonic() < deadline:
                self.reported.wait(deadline - time.monotonic())
            return self.reports


class ProgramEndpointTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.messaging = self.useFixture(messaging.Messaging(conf.CONF))
        self.useFixture(glance_fixture.GlanceFixture())
        self.directory = self.useFixture(fixtures.TempDir()).path
        # Where the agent's private download directories go.
        self.tmp = self.useFixture(fixtures.TempDir()).path
        self.useFixture(fixtures.MonkeyPatch('tempfile.tempdir', self.tmp))
        path = os.path.join(self.directory, 'fleet.yaml')
        with open(path, 'w') as stream:
            stream.write(FLEET)
        self.driver = fake.FakeDriver(path, host=HOST)
        self.agent = manager.AgentManager(host=HOST, driver_names=[])
        self.agent.drivers = {'fake_driver': self.driver}
        self.messaging.serve(rpcapi.TOPIC, HOST, [self.agent])
        self.client = rpcapi.AgentAPI()
        self.context = cyborg_context.get_admin_context()

    def _image(self, data=DATA):
        path = os.path.join(self.directory, 'bitstream.gbs')
        with open(path, 'wb') as stream:
            stream.write(data)
        properties = {'bs-name': 'aes', 'bs-uuid': str(uuid.uuid4()),
                      'vendor': '0x8086', 'board': 'pac_arria10',
                      'version': '1', 'driver_ver': '1',
                      'driver_path': '/opt', 'function_uuid': str(uuid.uuid4())}
        return glance_client.GlanceClient(conf.CONF).upload(
            path, 'aes', properties, ['FPGA'])['id']

    def _program(self, image_id, deployable_name=REGION,
                 driver_name='fake_driver'):
        return self.client.program(self.context, HOST, driver_name,
                                   deployable_name, image_id, timeout=30)

    def test_success_programs_and_removes_the_file(self):
        # Without the bitstream cache: a private download, removed.
        self.flags(bitstream_cache_size=0, group='agent')
        answer = self._program(self._image())

        self.assertEqual(vocabulary.ProgramResult.SUCCESS, answer['code'])
        self.assertIn(REGION, answer['message'])
        controlpath_id = self.agent.deployables.get('fake_driver')[REGION][0] \
            .controlpath_id
        self.assertTrue(self.driver.loaded_bitstream(controlpath_id, REGION)
                        .startswith(self.tmp))
        self.assertEqual([], os.listdir(self.tmp))

    def test_the_start_of_programming_is_logged_before_its_end(self):
        # An operator sees a programming that takes minutes (or whose
        # agent dies) under way, not only once it ended.
        logger = self.useFixture(fixtures.FakeLogger(level='INFO'))
        image_id = self._image()

        self._program(image_id)

        lines = [line for line in logger.output.splitlines()
                 if 'with image %s' % image_id in line]
        self.assertEqual(2, len(lines), logger.output)
        self.assertIn('Programming %s (driver fake_driver) with image %s: '
                      'started' % (REGION, image_id), lines[0])
        self.assertIn('SUCCESS', lines[1])

    def test_image_over_the_limit_is_an_invalid_bitstream(self):
        self.flags(max_bitstream_bytes=len(DATA) - 1, group='agent')

        answer = self._program(self._image())

        self.assertEqual(vocabulary.ProgramResult.INVALID_BITSTREAM,
                         answer['code'])
        self.assertIn('more than the %d allowed' % (len(DATA) - 1),
                      answer['message'])
        self.assertEqual([], os.listdir(self.tmp))

    def test_unknown_image_is_an_invalid_bitstream(self):
        answer = self._program(str(uuid.uuid4()))

        self.assertEqual(vocabulary.ProgramResult.INVALID_BITSTREAM,
                         answer['code'])
        self.assertIn('not found in Glance', answer['message'])

    def test_unknown_deployable_or_driver_is_an_invalid_deployable(self):
        image_id = self._image()
        for driver_name, name in (('fake_driver', 'no-such-region'),
                                  ('no_driver', REGION)):
            with self.subTest(driver=driver_name, name=name):
                answer = self._program(image_id, name, driver_name)
                self.assertEqual(vocabulary.ProgramResult.INVALID_DEPLOYABLE,
                                 answer['code'])
        self.assertEqual([], os.listdir(self.tmp))

    def test_a_driver_raising_is_a_failure(self):
        def broken(*args, **kwargs):
            raise RuntimeError('tool crashed')
        self.driver.program = broken

        answer = self._program(self._image())

        self.assertEqual(vocabulary.ProgramResult.FAILED, answer['code'])
        self.assertIn('RuntimeError: tool crashed', answer['message'])
        self.assertEqual([], os.listdir(self.tmp))

    def test_success_sends_the_next_inventory_report_now(self):
        self.flags(report_interval=3600, group='agent')
        conductor = self.agent.conductor = RecordingConductor()
        self.agent.start_periodic_tasks()
        self.addCleanup(self.agent.stop_periodic_tasks)
        self.assertEqual(1, conductor.wait_for(1))

        self._program(self._image())

        self.assertEqual(2, conductor.wait_for(2))
