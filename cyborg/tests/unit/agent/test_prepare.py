"""The agent's prepare_arqs endpoint, the driver contract's prepare, the fake's modes.

Calls go through the agent RPC client and the fake:// transport to a real
AgentManager, as the conductor's binder makes them.
"""

import os
import time

import fixtures
import oslo_messaging

from cyborg import conf
from cyborg import context as cyborg_context
from cyborg.agent import manager
from cyborg.agent import rpcapi
from cyborg.agent.drivers import base as drivers
from cyborg.agent.drivers import fake
from cyborg.agent.drivers import fake_inventory
from cyborg.tests import base
from cyborg.tests.fixtures import messaging

HOST = 'compute-1'
INVENTORY = """
fpgas:
  - regions: [{pfs: 1, vfs_per_pf: 2}]
  - prepare: fail
  - prepare: hang
"""


def arq(uuid, card, function=0, device=1, deployable=None, **extra):
    """What the binder sends for a handle of card ``card`` (bus 0x10 + card)."""
    bus = '%02x' % (0x10 + card)
    values = {'uuid': uuid, 'driver_name': 'fake_driver',
              'deployable_name': deployable or 'fpga-0000:%s:00.0-region0' % bus,
              'attach_type': 'TEST_PCI',
              'attach_info': {'domain': '0000', 'bus': bus,
                              'device': '%02x' % device,
                              'function': str(function)},
              'request_group': {}}
    values.update(extra)
    return values


class PrepareTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.messaging = self.useFixture(messaging.Messaging(conf.CONF))
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'inventory.yaml')
        with open(path, 'w') as stream:
            stream.write(INVENTORY)
        self.driver = fake.FakeDriver(path, host=HOST)
        self.agent = manager.AgentManager(host=HOST, driver_names=[])
        self.agent.drivers = {'fake_driver': self.driver}
        self.messaging.serve(rpcapi.TOPIC, HOST, [self.agent])
        self.addCleanup(self.driver.release_hangs)
        self.client = rpcapi.AgentAPI()
        self.context = cyborg_context.get_admin_context()
        self.logger = self.useFixture(fixtures.FakeLogger(level='INFO'))

    def test_handles_of_the_inventory_are_prepared(self):
        answer = self.client.prepare_arqs(
            self.context, HOST, [arq('a', 0, function=0),
                                 arq('b', 0, function=1)])

        self.assertEqual({'a': {'prepared': True, 'reason': None},
                          'b': {'prepared': True, 'reason': None}}, answer)

    def test_each_arq_gets_its_own_answer(self):
        answer = self.client.prepare_arqs(
            self.context, HOST, [arq('good', 0), arq('failing', 1, device=0),
                                 arq('gone', 0, function=7)])

        self.assertTrue(answer['good']['prepared'])
        self.assertFalse(answer['failing']['prepared'])
        self.assertIn('prepare: fail', answer['failing']['reason'])
        self.assertFalse(answer['gone']['prepared'])
        self.assertIn('no longer reports', answer['gone']['reason'])

    def test_unknown_driver_name_searches_every_driver(self):
        answer = self.client.prepare_arqs(
            self.context, HOST, [arq('a', 0, driver_name=None)])

        self.assertTrue(answer['a']['prepared'])

    def test_hanging_prepare_fails_alone_before_the_call_timeout(self):
        started = time.monotonic()

        answer = self.client.prepare_arqs(
            self.context, HOST, [arq('hung', 2, device=0), arq('good', 0)],
            timeout=3)

        self.assertLess(time.monotonic() - started, 3)
        self.assertEqual({'prepared': True, 'reason': None}, answer['good'])
        # Pending: the binder may ask again, and then waits for it.
        self.assertEqual({'prepared': False, 'pending': True,
                          'reason': 'still preparing after 3 s'},
                         answer['hung'])

    def test_agent_that_never_answers_times_the_call_out(self):
        self.assertRaises(oslo_messaging.MessagingTimeout,
                          self.client.prepare_arqs, self.context,
                          'compute-without-agent', [arq('a', 0)], timeout=1)

    def test_driver_error_fails_only_its_arq(self):
        def broken(*args, **kwargs):
            raise OSError('sysfs went away')

        self.driver.prepare = broken
        answer = self.client.prepare_arqs(self.context, HOST, [arq('a', 0)])

        self.assertEqual({'a': {'prepared': False,
                                'reason': 'OSError: sysfs went away'}},
                         answer)

    def test_only_the_bitstream_the_conductor_names_is_loaded(self):
        # The group's keys are the conductor's to resolve: an ARQ without
        # a bitstream_id gets its handle and nothing is programmed.
        answer = self.client.prepare_arqs(self.context, HOST, [arq(
            'a', 0, request_group={'accel:bitstream_id': 'image-1',
                                   'resources:FPGA': '1'})])

        self.assertTrue(answer['a']['prepared'])
        self.assertEqual([], self.driver.programs)
        self.assertIsNone(self.driver.loaded_bitstream(
            drivers.pci_controlpath_id('0000:10:00.0')))


class FakePrepareModesTest(base.TestCase):

    def test_prepare_mode_is_validated(self):
        error = self.assertRaises(
            fake_inventory.InvalidInventory, fake_inventory.validate_inventory,
            {'fpgas': [{'prepare': 'explode'}]})
        self.assertIn('fpgas[0].prepare', str(error))

    def test_modes_follow_the_devices(self):
        inventory = fake_inventory.validate_inventory(
            {'fpgas': [{'count': 2, 'prepare': 'fail'}],
             'gpus': [{'prepare': 'hang'}]})

        self.assertEqual(['fail', 'fail', 'hang'],
                         fake_inventory.prepare_modes(inventory))
        self.assertEqual(3, len(fake_inventory.build_devices(inventory)))

    def test_default_driver_prepares_everything(self):
        driver = fake.FakeDriver()
        device = driver.discover()[0]
        deployable = device.deployables[0].children[0]

        self.assertIsNone(driver.prepare(device, deployable,
                                         deployable.attach_handles[0], {}))
