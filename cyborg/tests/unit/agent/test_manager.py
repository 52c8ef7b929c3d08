"""The agent: drivers loaded by name, discovery, ping and its heartbeat."""

from cyborg import conf
from cyborg import context as cyborg_context
from cyborg import objects
from cyborg.agent import manager
from cyborg.agent import rpcapi
from cyborg.agent.drivers import fake
from cyborg.agent.drivers import fake_inventory
from cyborg.conductor import manager as conductor_manager
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.fixtures import messaging


class TestDrivers(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(messaging.Messaging(conf.CONF))

    def test_enabled_drivers_are_loaded_through_their_entry_points(self):
        self.flags(group='agent', enabled_drivers=['fake_driver'])

        agent = manager.AgentManager(host='compute-1')

        self.assertEqual(['fake_driver'], list(agent.drivers))
        self.assertIsInstance(agent.drivers['fake_driver'], fake.FakeDriver)

    def test_unknown_driver_is_refused_at_start_up(self):
        self.flags(group='agent', enabled_drivers=['fake_driver', 'nope'])

        error = self.assertRaises(manager.UnknownDriver,
                                  manager.AgentManager, host='compute-1')

        self.assertIn('nope', str(error))
        self.assertNotIn('fake_driver', str(error))
        self.assertIn('enabled_drivers', str(error))

    def test_discover_collects_every_drivers_devices(self):
        agent = manager.AgentManager(host='compute-1',
                                     driver_names=['fake_driver'])

        devices = agent.discover()

        self.assertEqual(1, len(devices))
        self.assertEqual(('FPGA', fake_inventory.VENDOR),
                         (devices[0].type, devices[0].vendor))

    def test_no_driver_discovers_nothing(self):
        agent = manager.AgentManager(host='compute-1', driver_names=[])

        self.assertEqual([], agent.discover())


class TestAgentOverRPC(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(database.Database(backend='sqlite'))
        self.messaging = self.useFixture(messaging.Messaging(conf.CONF))
        self.context = cyborg_context.get_admin_context()

    def test_ping_reaches_the_agent_of_that_host(self):
        agent = manager.AgentManager(host='compute-1')
        self.messaging.serve(rpcapi.TOPIC, 'compute-1', [agent])

        self.assertEqual('compute-1',
                         rpcapi.AgentAPI().ping(self.context, 'compute-1'))

    def test_heartbeat_is_written_by_the_conductor(self):
        self.messaging.serve(conductor_rpcapi.TOPIC, 'conductor-1',
                             [conductor_manager.ConductorManager('conductor-1')])
        agent = manager.AgentManager(host='compute-1')

        agent.heartbeat(self.context)
        agent.heartbeat(self.context)

        stored = objects.Service.get_by_host_and_binary(
            self.context, 'compute-1', 'cyborg-agent')
        self.assertEqual(2, stored.report_count)
        self.assertEqual(rpcapi.TOPIC, stored.topic)
