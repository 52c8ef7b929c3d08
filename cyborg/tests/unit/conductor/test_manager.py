"""The conductor's endpoints, called through a real RPC server on fake://."""

from cyborg import conf
from cyborg import context as cyborg_context
from cyborg import objects
from cyborg.conductor import manager
from cyborg.conductor import rpcapi
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.fixtures import messaging


class TestConductorOverRPC(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(database.Database(backend='sqlite'))
        self.messaging = self.useFixture(messaging.Messaging(conf.CONF))
        self.conductor = manager.ConductorManager(host='conductor-1')
        self.messaging.serve(rpcapi.TOPIC, 'conductor-1', [self.conductor])
        self.context = cyborg_context.get_admin_context()
        self.api = rpcapi.ConductorAPI()

    def test_report_heartbeat_writes_the_agents_row(self):
        first = self.api.report_heartbeat(self.context, 'compute-7',
                                          'cyborg-agent', 'cyborg-agent')
        second = self.api.report_heartbeat(self.context, 'compute-7',
                                           'cyborg-agent', 'cyborg-agent')

        self.assertIsInstance(second, objects.Service)
        self.assertEqual((1, 2), (first.report_count, second.report_count))
        stored = objects.Service.get_by_host_and_binary(
            self.context, 'compute-7', 'cyborg-agent')
        self.assertEqual(2, stored.report_count)
        self.assertEqual('cyborg-agent', stored.topic)
        self.assertTrue(stored.is_up(conf.CONF.service_down_time))

    def test_ping_answers_with_the_conductors_host(self):
        self.assertEqual('conductor-1', self.api.ping(self.context))

    def test_own_heartbeat_writes_the_conductors_row(self):
        self.conductor.heartbeat(self.context)
        self.conductor.heartbeat(self.context)

        stored = objects.Service.get_by_host_and_binary(
            self.context, 'conductor-1', 'cyborg-conductor')
        self.assertEqual(2, stored.report_count)
        self.assertEqual(rpcapi.TOPIC, stored.topic)
