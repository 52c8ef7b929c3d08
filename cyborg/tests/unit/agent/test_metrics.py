"""cyborg-agent's metrics server, scraped after a real inventory report,
a prepare call and a programming request over the fake:// transport.

The agent runs the fake driver; the conductor side is
``test_report.RecordingConductor``, so every report crosses RPC.
"""

import os

import fixtures
from oslo_utils import uuidutils

from cyborg import conf
from cyborg import context as cyborg_context
from cyborg import metrics
from cyborg.agent import manager as agent_manager
from cyborg.agent import rpcapi as agent_rpcapi
from cyborg.agent.drivers import fake
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.agent import metrics as agent_metrics
from cyborg.tests import base
from cyborg.tests.fixtures import messaging
from cyborg.tests.unit.agent import test_report
from cyborg.tests.unit.metrics import scraping

HOST = 'compute-1'
INVENTORY = """
fpgas:
  - regions: [{pfs: 1, vfs_per_pf: 2}]
"""
REPORT_COUNT = 'cyborg_agent_inventory_report_duration_seconds_count'
PREPARED = 'cyborg_agent_prepared_arqs_total'
PROGRAMMING = 'cyborg_agent_programming_total'


class TestAgentMetrics(base.TestCase):

    def setUp(self):
        super().setUp()
        self.messaging = self.useFixture(messaging.Messaging(conf.CONF))
        self.conductor = test_report.RecordingConductor()
        self.messaging.serve(conductor_rpcapi.TOPIC, 'conductor-1',
                             [self.conductor])
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'inventory.yaml')
        with open(path, 'w') as stream:
            stream.write(INVENTORY)
        self.agent = agent_manager.AgentManager(host=HOST, driver_names=[])
        self.agent.drivers = {'fake_driver': fake.FakeDriver(path, host=HOST)}
        self.messaging.serve(agent_rpcapi.TOPIC, HOST,
                             [agent_metrics.counting_endpoints(self.agent)])
        self.context = cyborg_context.get_admin_context()
        self.exporter = agent_metrics.exporter('127.0.0.1', 0)
        self.exporter.start()
        self.addCleanup(self.exporter.stop)
        self.addCleanup(metrics.disable)

    def moved(self, before, after, name, **labels):
        return after.value(name, **labels) - before.value(name, **labels)

    def test_a_report_is_timed_once(self):
        before = scraping.scrape(self.exporter.port)

        self.assertTrue(self.agent.report_inventory(self.context))

        after = scraping.scrape(self.exporter.port)
        self.assertEqual(1, self.conductor.count())
        self.assertEqual(1, self.moved(before, after, REPORT_COUNT,
                                       outcome='sent'))
        self.assertEqual(0, self.moved(before, after, REPORT_COUNT,
                                       outcome='failed'))

    def test_prepared_and_failed_arqs_and_programming_are_counted(self):
        self.assertTrue(self.agent.report_inventory(self.context))
        deployable, handle = self._a_region_handle()
        good = {'uuid': uuidutils.generate_uuid(),
                'driver_name': 'fake_driver',
                'deployable_name': deployable.name,
                'attach_type': handle.attach_type,
                'attach_info': handle.attach_info, 'request_group': {},
                'hold': None, 'bitstream_id': None}
        unknown = dict(good, uuid=uuidutils.generate_uuid(),
                       deployable_name='no-such-deployable')
        before = scraping.scrape(self.exporter.port)

        answer = agent_rpcapi.AgentAPI().prepare_arqs(
            self.context, HOST, [good, unknown])
        result = agent_rpcapi.AgentAPI().program(
            self.context, HOST, 'fake_driver', 'no-such-deployable',
            uuidutils.generate_uuid())

        after = scraping.scrape(self.exporter.port)
        self.assertTrue(answer[good['uuid']]['prepared'])
        self.assertFalse(answer[unknown['uuid']]['prepared'])
        self.assertEqual(1, self.moved(before, after, PREPARED,
                                       result='prepared'))
        self.assertEqual(1, self.moved(before, after, PREPARED,
                                       result='failed'))
        self.assertNotEqual(0, result['code'])
        self.assertEqual(1, self.moved(before, after, PROGRAMMING,
                                       result='INVALID_DEPLOYABLE'))

    def _a_region_handle(self):
        for device in self.agent.discover():
            pending = list(device.deployables)
            while pending:
                deployable = pending.pop()
                if deployable.attach_handles:
                    return deployable, deployable.attach_handles[0]
                pending.extend(deployable.children)
        raise AssertionError('the fake driver reported no attach handle')
