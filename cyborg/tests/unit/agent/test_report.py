"""The agent's inventory report: what it sends, when, and what stops it.

The conductor side is a small endpoint served over the fake:// transport,
so every report really crosses RPC.
"""

import os
import threading
import time

import fixtures
import oslo_messaging
import sqlalchemy as sa

from cyborg.common import vocabulary
from cyborg import conf
from cyborg import context as cyborg_context
from cyborg import exception
from cyborg import service
from cyborg.agent import manager
from cyborg.agent import rpcapi
from cyborg.agent.drivers import base as drivers
from cyborg.agent.drivers import fake
from cyborg.conductor import inventory_report
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.db import models
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.fixtures import messaging


def gpu(bus):
    """A whole GPU on PCI bus ``bus``, passed through as one PGPU."""
    address = {'domain': '0000', 'bus': '%02x' % bus, 'device': '00',
               'function': '0'}
    return drivers.DriverDevice(
        type='GPU', vendor='0x10de', model='test-gpu',
        controlpath_id=drivers.DriverControlpathId(cpid_type='PCI',
                                                   cpid_info=dict(address)),
        deployables=[drivers.DriverDeployable(
            name='gpu-0000:%02x:00.0' % bus, num_accelerators=1,
            attributes={'rc': 'PGPU'},
            attach_handles=[drivers.DriverAttachHandle(
                attach_type='PCI', attach_info=dict(address))])])


class ListDriver(drivers.Driver):
    """Discovers the devices it holds; ``devices`` may change between calls."""

    def __init__(self, *devices):
        self.devices = list(devices)

    def discover(self):
        return list(self.devices)

    def program(self, controlpath_id, bitstream_path):
        return vocabulary.ProgramResult.FAILURE


class BrokenDriver(ListDriver):
    """Fails to discover while ``broken`` is set."""

    def __init__(self, *devices):
        super().__init__(*devices)
        self.broken = True

    def discover(self):
        if self.broken:
            raise OSError('sysfs went away')
        return super().discover()


class RecordingConductor:
    """The conductor's report_inventory endpoint; records or fails on request."""

    target = oslo_messaging.Target(version='1.1')

    def __init__(self, failures=0):
        self.reports = []
        self.failures = failures
        self.lock = threading.Lock()

    @oslo_messaging.expose
    @oslo_messaging.expected_exceptions(exception.CyborgException)
    def report_inventory(self, context, host, devices):
        with self.lock:
            self.reports.append((time.monotonic(), host, devices))
            if self.failures:
                self.failures -= 1
                raise exception.ServiceUnavailable(reason='database away')

    def count(self):
        with self.lock:
            return len(self.reports)


class InventoryConductor:
    """A conductor endpoint that records reports in the database only."""

    target = oslo_messaging.Target(version='1.1')

    @oslo_messaging.expose
    def report_inventory(self, context, host, devices):
        inventory_report.apply(context, host, devices)


def wait_for(predicate, timeout=5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


class TestInventoryReport(base.TestCase):

    def setUp(self):
        super().setUp()
        self.messaging = self.useFixture(messaging.Messaging(conf.CONF))
        self.flags(group='agent', report_interval=1)
        self.logger = self.useFixture(fixtures.FakeLogger(
            name='cyborg.agent.manager', level='INFO'))
        self.context = cyborg_context.get_admin_context()

    def serve_conductor(self, endpoint):
        self.messaging.serve(conductor_rpcapi.TOPIC, 'conductor-1', [endpoint])
        return endpoint

    def agent(self, **drivers_by_name):
        agent = manager.AgentManager(host='compute-1', driver_names=[])
        agent.drivers = dict(drivers_by_name)
        self.addCleanup(agent.stop_periodic_tasks)
        return agent

    def test_report_sends_the_full_inventory_of_every_driver(self):
        conductor = self.serve_conductor(RecordingConductor())
        agent = self.agent(gpu_driver=ListDriver(gpu(0x3b), gpu(0x3c)),
                           other_driver=ListDriver(gpu(0x86)))

        self.assertTrue(agent.report_inventory(self.context))

        [(_, host, devices)] = conductor.reports
        self.assertEqual('compute-1', host)
        self.assertEqual(
            [('gpu_driver', 'gpu-0000:3b:00.0'),
             ('gpu_driver', 'gpu-0000:3c:00.0'),
             ('other_driver', 'gpu-0000:86:00.0')],
            [(device['driver_name'], device['deployables'][0]['name'])
             for device in devices])
        self.assertEqual(drivers.device_to_primitive(gpu(0x86), 'other_driver'),
                         devices[2])

    def test_a_failing_driver_skips_the_whole_report(self):
        conductor = self.serve_conductor(RecordingConductor())
        broken = BrokenDriver(gpu(0x86))
        agent = self.agent(gpu_driver=ListDriver(gpu(0x3b)),
                           broken_driver=broken)

        self.assertFalse(agent.report_inventory(self.context))

        self.assertEqual([], conductor.reports)
        self.assertIn('Driver broken_driver failed to discover its devices',
                      self.logger.output)
        self.assertIn('sysfs went away', self.logger.output)
        self.assertIn('No inventory report from compute-1 this time: '
                      'driver(s) broken_driver failed', self.logger.output)

        broken.broken = False
        self.assertTrue(agent.report_inventory(self.context))
        self.assertEqual(2, len(conductor.reports[0][2]))

    def test_loop_reports_at_start_and_every_interval(self):
        conductor = self.serve_conductor(RecordingConductor())
        driver = ListDriver(gpu(0x3b))
        agent = self.agent(gpu_driver=driver)

        started = time.monotonic()
        agent.start_periodic_tasks()
        self.assertTrue(wait_for(lambda: conductor.count() >= 1, timeout=1))
        self.assertLess(conductor.reports[0][0] - started, 0.5)
        driver.devices.append(gpu(0x3c))
        self.assertTrue(wait_for(lambda: conductor.count() >= 3, timeout=4))

        times = [report[0] for report in conductor.reports]
        for earlier, later in zip(times, times[1:3], strict=False):
            self.assertGreater(later - earlier, 0.8)
            self.assertLess(later - earlier, 1.5)
        # Each report is the inventory of that moment.
        self.assertEqual(1, len(conductor.reports[0][2]))
        self.assertEqual(2, len(conductor.reports[-1][2]))

    def test_loop_survives_a_failing_conductor(self):
        conductor = self.serve_conductor(RecordingConductor(failures=2))
        agent = self.agent(gpu_driver=ListDriver(gpu(0x3b)))

        agent.start_periodic_tasks()

        self.assertTrue(wait_for(lambda: conductor.count() >= 3, timeout=5))
        failures = [line for line in self.logger.output.splitlines()
                    if 'Inventory report of compute-1 to the conductor '
                       'failed' in line]
        self.assertEqual(2, len(failures))
        self.assertIn('ServiceUnavailable', failures[0])
        self.assertTrue(agent._report_thread.is_alive())

    def test_loop_retries_until_a_conductor_answers(self):
        self.flags(rpc_response_timeout=1)
        agent = self.agent(gpu_driver=ListDriver(gpu(0x3b)))

        agent.start_periodic_tasks()
        self.assertTrue(wait_for(
            lambda: 'MessagingTimeout' in self.logger.output, timeout=4))
        conductor = self.serve_conductor(RecordingConductor())

        self.assertTrue(wait_for(lambda: conductor.count() >= 1, timeout=4))

    def test_stop_ends_the_reports(self):
        # A stop that waited out the interval would take 60 s.
        self.flags(group='agent', report_interval=60)
        conductor = self.serve_conductor(RecordingConductor())
        agent = self.agent(gpu_driver=ListDriver(gpu(0x3b)))
        agent.start_periodic_tasks()
        self.assertTrue(wait_for(lambda: conductor.count() >= 1))
        thread = agent._report_thread

        started = time.monotonic()
        agent.stop_periodic_tasks()

        self.assertLess(time.monotonic() - started, 30)
        self.assertFalse(thread.is_alive())
        self.flags(group='agent', report_interval=1)
        count = conductor.count()
        time.sleep(1.3)
        self.assertEqual(count, conductor.count())
        # Stopping twice is harmless; starting again reports again.
        agent.stop_periodic_tasks()
        agent.start_periodic_tasks()
        self.assertTrue(wait_for(lambda: conductor.count() > count))

    def test_service_reports_once_serving_and_stops_reporting_on_stop(self):
        conductor = self.serve_conductor(RecordingConductor())
        agent = self.agent(gpu_driver=ListDriver(gpu(0x3b)))
        rpc_service = service.RPCService(agent, rpcapi.TOPIC, 'compute-1',
                                         heartbeat=lambda context: None)

        rpc_service.start()
        self.addCleanup(rpc_service.stop)

        self.assertTrue(wait_for(lambda: conductor.count() >= 1, timeout=1))
        self.assertEqual('compute-1',
                         rpcapi.AgentAPI().ping(self.context, 'compute-1'))
        rpc_service.stop()
        count = conductor.count()
        time.sleep(1.3)
        self.assertEqual(count, conductor.count())
        self.assertIsNone(agent._report_thread)


class TestInventoryReachesTheDatabase(base.TestCase):

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(database.Database())
        self.messaging = self.useFixture(messaging.Messaging(conf.CONF))
        self.context = cyborg_context.get_admin_context()

    def hostnames_and_names(self):
        query = sa.select(models.Device.hostname, models.Deployable.name).join(
            models.Deployable, models.Deployable.device_id == models.Device.id)
        with self.database.engine.connect() as connection:
            return sorted(tuple(row) for row in connection.execute(query))

    def test_reported_devices_come_and_go_in_the_database(self):
        self.messaging.serve(conductor_rpcapi.TOPIC, 'conductor-1',
                             [InventoryConductor()])
        driver = ListDriver(gpu(0x3b), gpu(0x3c))
        agent = manager.AgentManager(host='compute-1', driver_names=[])
        agent.drivers = {'gpu_driver': driver}

        agent.report_inventory(self.context)
        self.assertEqual([('compute-1', 'gpu-0000:3b:00.0'),
                          ('compute-1', 'gpu-0000:3c:00.0')],
                         self.hostnames_and_names())

        driver.devices.pop()
        agent.report_inventory(self.context)
        self.assertEqual([('compute-1', 'gpu-0000:3b:00.0')],
                         self.hostnames_and_names())

    def test_malformed_fake_inventory_keeps_the_devices_until_fixed(self):
        logger = self.useFixture(fixtures.FakeLogger(
            name='cyborg.agent.manager', level='INFO'))
        self.messaging.serve(conductor_rpcapi.TOPIC, 'conductor-1',
                             [InventoryConductor()])
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'fleet.yaml')
        agent = manager.AgentManager(host='compute-1', driver_names=[])
        agent.drivers = {'fake_driver': fake.FakeDriver(path),
                         'gpu_driver': ListDriver(gpu(0x3b))}
        write_file(path, 'fpgas: [{count: 1}]\n')
        self.assertTrue(agent.report_inventory(self.context))
        reported = self.hostnames_and_names()
        self.assertIn(('compute-1', 'fpga-0000:10:00.0-region0'), reported)

        write_file(path, 'fpgas: [{count: one}]\n')

        self.assertIsNone(agent.collect_inventory())
        self.assertFalse(agent.report_inventory(self.context))
        self.assertEqual(reported, self.hostnames_and_names())
        # One ERROR line per attempt, with the driver and the bad key, and
        # no traceback: the operator has a file to fix, not a bug to report.
        errors = [line for line in logger.output.splitlines()
                  if 'cannot tell' in line]
        self.assertEqual(
            ['Driver fake_driver cannot tell which devices compute-1 has: '
             'fake inventory %s is unusable: fpgas[0].count: expected a '
             "non-negative integer, got 'one'" % path] * 2, errors)
        self.assertNotIn('Traceback', logger.output)
        self.assertIn('No inventory report from compute-1 this time: '
                      'driver(s) fake_driver failed', logger.output)

        write_file(path, 'fpgas: [{count: 2}]\n')

        inventory = agent.collect_inventory()
        self.assertEqual(['0x10', '0x11', '0x3b'], sorted(
            '0x' + device['controlpath_id']['cpid_info']['bus']
            for device in inventory))
        self.assertTrue(agent.report_inventory(self.context))
        self.assertIn(('compute-1', 'fpga-0000:11:00.0-region0'),
                      self.hostnames_and_names())
        self.assertLess(set(reported), set(self.hostnames_and_names()))

    def deployable_rows(self):
        """{name: row} of every deployable, with its parent's and root's
        names instead of their ids."""
        query = sa.select(models.Deployable)
        with self.database.engine.connect() as connection:
            rows = {row.id: row for row in connection.execute(query)}
        name_of = {row_id: row.name for row_id, row in rows.items()}
        name_of[None] = None
        return {row.name: dict(row._mapping, parent=name_of[row.parent_id],
                               root=name_of[row.root_id])
                for row in rows.values()}

    def test_fake_cards_are_stored_as_trees_below_their_roots(self):
        self.messaging.serve(conductor_rpcapi.TOPIC, 'conductor-1',
                             [InventoryConductor()])
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'fleet.yaml')
        write_file(path, 'fpgas: [{regions: [{pfs: 2}, {}]}]\n'
                         'gpus: [{vgpu_types: [{type: nvidia-222, '
                         'name: GRID T4-1B, instances: 2}]}, {}]\n')
        agent = manager.AgentManager(host='compute-1', driver_names=[])
        agent.drivers = {'fake_driver': fake.FakeDriver(path)}

        self.assertTrue(agent.report_inventory(self.context))

        fpga, gpu = 'fpga-0000:10:00.0', 'gpu-0000:11:00.0'
        # name: (parent, root, num_accelerators, has a provider uuid)
        self.assertEqual({
            fpga: (None, None, 0, False),
            fpga + '-region0': (fpga, fpga, 2, True),
            fpga + '-region0-pf0': (fpga + '-region0', fpga, 0, False),
            fpga + '-region0-pf1': (fpga + '-region0', fpga, 0, False),
            fpga + '-region1': (fpga, fpga, 1, True),
            fpga + '-region1-pf0': (fpga + '-region1', fpga, 0, False),
            gpu: (None, None, 0, False),
            gpu + '-nvidia-222': (gpu, gpu, 2, True),
            # A whole GPU is the accelerator itself: its own root.
            'gpu-0000:12:00.0': (None, None, 1, True),
        }, {name: (row['parent'], row['root'], row['num_accelerators'],
                   row['rp_uuid'] is not None)
            for name, row in self.deployable_rows().items()})

    def test_regions_keep_their_uuids_and_providers_below_a_new_root(self):
        # Reports of an agent from before the card roots: regions and vGPU
        # types at the top of their devices.
        self.messaging.serve(conductor_rpcapi.TOPIC, 'conductor-1',
                             [InventoryConductor()])
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'fleet.yaml')
        write_file(path, 'fpgas: [{regions: [{vfs_per_pf: 2}, {}]}]\n'
                         'gpus: [{vgpu_types: [{type: nvidia-222, '
                         'name: GRID T4-1B, instances: 2}]}]\n')
        driver = fake.FakeDriver(path)
        flat = driver.discover()
        for device in flat:
            device.deployables = device.deployables[0].children
        agent = manager.AgentManager(host='compute-1', driver_names=[])
        agent.drivers = {'fake_driver': ListDriver(*flat)}
        agent.report_inventory(self.context)
        before = self.deployable_rows()

        agent.drivers = {'fake_driver': driver}
        agent.report_inventory(self.context)
        after = self.deployable_rows()

        self.assertEqual({'fpga-0000:10:00.0', 'gpu-0000:11:00.0'},
                         set(after) - set(before))
        for name, row in before.items():
            self.assertEqual((row['id'], row['uuid'], row['rp_uuid']),
                             (after[name]['id'], after[name]['uuid'],
                              after[name]['rp_uuid']), name)
        self.assertEqual(
            ('fpga-0000:10:00.0', 'fpga-0000:10:00.0'),
            (after['fpga-0000:10:00.0-region1']['parent'],
             after['fpga-0000:10:00.0-region1']['root']))
        self.assertEqual(
            ('fpga-0000:10:00.0-region0', 'fpga-0000:10:00.0'),
            (after['fpga-0000:10:00.0-region0-pf0']['parent'],
             after['fpga-0000:10:00.0-region0-pf0']['root']))
        self.assertEqual(
            ('gpu-0000:11:00.0', 'gpu-0000:11:00.0'),
            (after['gpu-0000:11:00.0-nvidia-222']['parent'],
             after['gpu-0000:11:00.0-nvidia-222']['root']))


def write_file(path, text):
    with open(path, 'w', encoding='utf-8') as stream:
        stream.write(text)
