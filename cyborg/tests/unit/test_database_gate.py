"""RPCService with a database check: no RPC request taken while the
database is out, taken again by itself once the check answers."""

import threading

import oslo_messaging

from cyborg import conf
from cyborg import context as cyborg_context
from cyborg import exception
from cyborg import rpc
from cyborg import service
from cyborg.db import api as db_api
from cyborg.tests import base
from cyborg.tests.fixtures import messaging
from cyborg.tests.unit import test_service

TOPIC = 'cyborg-test-gate'


class Database:
    """A check that fails while ``out``; counts its calls."""

    def __init__(self):
        self.out = False
        self.checks = 0
        self.checked = threading.Event()

    def __call__(self, context):
        self.checks += 1
        self.checked.set()
        if self.out:
            raise exception.DatabaseUnavailable(reason='OperationalError 2003')
        return 1


class TestDatabaseGate(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(messaging.Messaging(conf.CONF))
        # Long: the checks the tests make happen on purpose.
        self.flags(report_interval=3600)
        self.context = cyborg_context.get_admin_context()
        self.database = Database()
        self.service = service.RPCService(
            test_service.Manager(), TOPIC, 'host-1',
            test_service.Heartbeats(), database_check=self.database)
        self.service.start()
        self.addCleanup(self.service.stop)
        self.client = rpc.get_client(oslo_messaging.Target(
            topic=TOPIC, server='host-1'), version_cap=None).prepare(
            timeout=2)

    def test_no_request_is_taken_while_the_database_is_out(self):
        gate = self.service._gate
        self.assertEqual('pong', self.client.call(self.context, 'ping'))
        self.assertTrue(gate.check_once())
        self.assertTrue(self.service.consuming)

        self.database.out = True
        self.assertFalse(gate.check_once())
        self.assertFalse(self.service.consuming)
        self.assertRaises(oslo_messaging.MessagingTimeout, self.client.call,
                          self.context, 'ping')
        self.assertFalse(gate.check_once())

        self.database.out = False
        self.assertTrue(gate.check_once())
        self.assertTrue(self.service.consuming)
        self.assertEqual('pong', self.client.call(self.context, 'ping'))

    def test_an_outage_seen_elsewhere_checks_at_once(self):
        self.database.out = True
        self.database.checked.clear()
        db_api.OUTAGE.failed(exception.DatabaseUnavailable(reason='x'))
        self.assertTrue(self.database.checked.wait(5))
        self.assertTrue(test_service.wait_for(
            lambda: not self.service.consuming))

    def test_stop_stops_checking(self):
        self.service.stop()
        checks = self.database.checks
        db_api.OUTAGE.failed(exception.DatabaseUnavailable(reason='x'))
        self.assertEqual(checks, self.database.checks)
        self.assertFalse(self.service.consuming)
