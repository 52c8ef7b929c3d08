"""prepare_arqs finds attach handles in the inventory the agent last reported.

Drivers here count their discoveries and record what they are asked to
prepare; the conductor is a small endpoint on the fake:// transport that
takes the reports, and prepare_arqs is called through the agent's RPC
client as the conductor's binder calls it.
"""

import copy
import threading

import oslo_messaging

from cyborg.common import vocabulary
from cyborg import conf
from cyborg import context as cyborg_context
from cyborg.agent import manager
from cyborg.agent import rpcapi
from cyborg.agent.drivers import base as drivers
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.tests import base
from cyborg.tests.fixtures import messaging

HOST = 'compute-1'


def gpu(bus):
    """A whole GPU on PCI bus ``bus``, with one PCI attach handle."""
    address = '0000:%02x:00.0' % bus
    return drivers.DriverDevice(
        type='GPU', vendor='0x10de', model='test-gpu',
        controlpath_id=drivers.pci_controlpath_id(address),
        deployables=[drivers.DriverDeployable(
            name='gpu-' + address, num_accelerators=1,
            attributes={'rc': 'PGPU'},
            attach_handles=[drivers.pci_attach_handle(address)])])


def arq(uuid, bus, driver_name='gpu_driver'):
    """What the binder sends for the handle of the GPU on bus ``bus``."""
    address = '0000:%02x:00.0' % bus
    return {'uuid': uuid, 'driver_name': driver_name,
            'deployable_name': 'gpu-' + address, 'attach_type': 'PCI',
            'attach_info': drivers.pci_address_info(address),
            'request_group': {'resources:PGPU': '1'}}


class CountingDriver(drivers.Driver):
    """Discovers copies of ``devices`` (which may change), counting calls."""

    def __init__(self, *devices):
        self.devices = list(devices)
        self.discoveries = []
        self.prepared = []
        self.broken = False
        self.lock = threading.Lock()

    def discover(self):
        if self.broken:
            raise drivers.DiscoveryFailed('inventory file is unusable')
        found = copy.deepcopy(self.devices)
        with self.lock:
            self.discoveries.append(found)
        return found

    def prepare(self, device, deployable, attach_handle, request_group,
                **kwargs):
        with self.lock:
            self.prepared.append((device, deployable, attach_handle))

    def program(self, controlpath_id, bitstream_path):
        return vocabulary.ProgramResult.FAILURE

    def discover_count(self):
        with self.lock:
            return len(self.discoveries)


class Conductor:
    """The conductor's report_inventory endpoint, keeping nothing."""

    target = oslo_messaging.Target(version='1.1')

    @oslo_messaging.expose
    def report_inventory(self, context, host, devices):
        pass


class PrepareFromTheCacheTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.messaging = self.useFixture(messaging.Messaging(conf.CONF))
        self.messaging.serve(conductor_rpcapi.TOPIC, 'conductor-1',
                             [Conductor()])
        self.driver = CountingDriver(gpu(0x3b), gpu(0x3c))
        self.other = CountingDriver(gpu(0x86))
        self.agent = manager.AgentManager(host=HOST, driver_names=[])
        self.agent.drivers = {'gpu_driver': self.driver,
                              'other_driver': self.other}
        self.messaging.serve(rpcapi.TOPIC, HOST, [self.agent])
        self.client = rpcapi.AgentAPI()
        self.context = cyborg_context.get_admin_context()

    def prepare(self, *arqs):
        return self.client.prepare_arqs(self.context, HOST, list(arqs))

    def test_prepare_after_a_report_discovers_nothing(self):
        self.assertTrue(self.agent.report_inventory(self.context))
        self.assertEqual(1, self.driver.discover_count())

        answer = self.prepare(arq('a', 0x3b), arq('b', 0x3c),
                              arq('c', 0x86, driver_name=None))

        self.assertEqual({uuid: {'prepared': True, 'reason': None}
                          for uuid in 'abc'}, answer)
        self.assertEqual(1, self.driver.discover_count())
        self.assertEqual(1, self.other.discover_count())
        # The driver is handed the objects of the report's discovery.
        [reported] = self.driver.discoveries
        self.assertEqual(
            sorted(id(device) for device in reported),
            sorted(id(device) for device, _, _ in self.driver.prepared))
        handles = {id(device.deployables[0].attach_handles[0])
                   for device in reported}
        self.assertEqual(handles, {id(handle) for _, _, handle
                                   in self.driver.prepared})

    def test_prepare_before_any_report_discovers_once_for_the_call(self):
        answer = self.prepare(arq('a', 0x3b), arq('b', 0x3c))

        self.assertEqual({uuid: {'prepared': True, 'reason': None}
                          for uuid in 'ab'}, answer)
        self.assertEqual(1, self.driver.discover_count())
        # Only the driver named discovers, and its discovery is kept.
        self.assertEqual(0, self.other.discover_count())
        self.assertTrue(self.prepare(arq('c', 0x3b))['c']['prepared'])
        self.assertEqual(1, self.driver.discover_count())

    def test_handle_new_since_the_report_is_found_by_one_discovery(self):
        self.agent.report_inventory(self.context)
        self.driver.devices.append(gpu(0x3d))

        answer = self.prepare(arq('new', 0x3d), arq('old', 0x3b),
                              arq('also-new', 0x3d))

        self.assertEqual({uuid: {'prepared': True, 'reason': None}
                          for uuid in ('new', 'old', 'also-new')}, answer)
        self.assertEqual(2, self.driver.discover_count())
        self.assertEqual(1, self.other.discover_count())
        # The discovery refreshed the cache: the next call needs none.
        self.assertTrue(self.prepare(arq('again', 0x3d))['again']['prepared'])
        self.assertEqual(2, self.driver.discover_count())

    def test_handle_the_host_does_not_have_fails_after_one_discovery(self):
        self.agent.report_inventory(self.context)

        answer = self.prepare(arq('gone', 0x3e), arq('good', 0x3b),
                              arq('also-gone', 0x3f))

        self.assertEqual(2, self.driver.discover_count())
        self.assertEqual({'prepared': True, 'reason': None}, answer['good'])
        self.assertEqual(
            {'prepared': False,
             'reason': 'host compute-1 no longer reports attach handle PCI '
                       '{"bus":"3e","device":"00","domain":"0000",'
                       '"function":"0"} of deployable gpu-0000:3e:00.0'},
            answer['gone'])
        self.assertFalse(answer['also-gone']['prepared'])
        self.assertIn('no longer reports', answer['also-gone']['reason'])
        # Each call that misses discovers once more: the host may change.
        self.assertFalse(self.prepare(arq('gone', 0x3e))['gone']['prepared'])
        self.assertEqual(3, self.driver.discover_count())

    def test_handle_gone_from_the_cache_and_the_host_fails(self):
        self.agent.report_inventory(self.context)
        self.driver.devices.pop()
        self.agent.report_inventory(self.context)

        answer = self.prepare(arq('gone', 0x3c))

        self.assertFalse(answer['gone']['prepared'])
        self.assertIn('no longer reports attach handle PCI',
                      answer['gone']['reason'])
        self.assertEqual(3, self.driver.discover_count())

    def test_driver_failing_at_a_report_is_asked_again_at_the_bind(self):
        self.agent.report_inventory(self.context)
        self.driver.broken = True
        self.assertFalse(self.agent.report_inventory(self.context))

        answer = self.prepare(arq('a', 0x3b), arq('b', 0x3c))

        # No stale entry: the bind asks the driver, whose failure is the
        # ARQs' reason, for each of them.
        self.assertEqual({uuid: {'prepared': False,
                                 'reason': 'inventory file is unusable'}
                          for uuid in 'ab'}, answer)
        self.assertEqual([], self.driver.prepared)
        self.driver.broken = False
        self.assertTrue(self.prepare(arq('c', 0x3b))['c']['prepared'])
        self.assertEqual(2, self.driver.discover_count())
        # The other driver's discovery at the failed report was kept.
        answer = self.prepare(arq('d', 0x86, driver_name='other_driver'))
        self.assertTrue(answer['d']['prepared'])
        self.assertEqual(2, self.other.discover_count())


class DeployableCacheTest(base.TestCase):

    def test_entries_are_per_driver_and_replaced_whole(self):
        cache = manager.DeployableCache()
        self.assertIsNone(cache.get('gpu_driver'))

        first = cache.replace('gpu_driver', [gpu(0x3b), gpu(0x3c)])
        cache.replace('other_driver', [gpu(0x86)])

        self.assertIs(first, cache.get('gpu_driver'))
        self.assertEqual(['gpu-0000:3b:00.0', 'gpu-0000:3c:00.0'],
                         sorted(first))
        device, deployable = first['gpu-0000:3c:00.0']
        self.assertIs(device.deployables[0], deployable)
        cache.replace('gpu_driver', [gpu(0x3d)])
        self.assertEqual(['gpu-0000:3d:00.0'], list(cache.get('gpu_driver')))
        # The index handed out before is not changed under its reader.
        self.assertEqual(2, len(first))
        self.assertEqual(['gpu-0000:86:00.0'], list(cache.get('other_driver')))
        cache.forget('gpu_driver')
        cache.forget('gpu_driver')
        self.assertIsNone(cache.get('gpu_driver'))

    def test_children_of_a_card_are_indexed_with_their_device(self):
        region = drivers.DriverDeployable(name='fpga-0000:10:00.0-region0',
                                          num_accelerators=1)
        card = drivers.DriverDevice(
            type='FPGA', vendor='0xabcd', model='test',
            controlpath_id=drivers.pci_controlpath_id('0000:10:00.0'),
            deployables=[drivers.root_deployable('fpga-0000:10:00.0',
                                                 [region])])

        index = manager.DeployableCache().replace('fake_driver', [card])

        self.assertEqual((card, region), index['fpga-0000:10:00.0-region0'])
        self.assertEqual(card, index['fpga-0000:10:00.0'][0])
