"""The agent's report carries each device's health, over RPC (fake://)."""

from cyborg import conf
from cyborg import context as cyborg_context
from cyborg.agent import manager
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.tests import base
from cyborg.tests.fixtures import messaging
from cyborg.tests.unit.agent import test_report


class TestReportHealth(base.TestCase):

    def setUp(self):
        super().setUp()
        self.messaging = self.useFixture(messaging.Messaging(conf.CONF))
        self.context = cyborg_context.get_admin_context()

    def test_health_and_reason_cross_rpc(self):
        conductor = test_report.RecordingConductor()
        self.messaging.serve(conductor_rpcapi.TOPIC, 'conductor-1',
                             [conductor])
        faulty = test_report.gpu(0x3b)
        faulty.health = 'degraded'
        faulty.health_reason = 'PCIe AER: 1 new non-fatal error(s) (1 in all)'
        agent = manager.AgentManager(host='compute-1', driver_names=[])
        agent.drivers = {'gpu_driver': test_report.ListDriver(
            faulty, test_report.gpu(0x3c))}

        self.assertTrue(agent.report_inventory(self.context))

        [(_, _, devices)] = conductor.reports
        self.assertEqual(
            [('degraded', 'PCIe AER: 1 new non-fatal error(s) (1 in all)'),
             ('healthy', None)],
            [(device['health'], device['health_reason'])
             for device in devices])
