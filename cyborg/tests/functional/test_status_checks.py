"""cyborg-status upgrade check: reachability of the broker, Placement and
Nova, and ARQs stuck in BindStarted, against real servers.

The broker is the local RabbitMQ, Placement the real one served on a port;
Nova is not part of this repository's test servers, so its check talks to
the events stand-in of the process tests (any answer below 500 is Nova
answering). Unreachable means a port nothing listens on.
"""

import datetime
import urllib.parse

from keystoneauth1 import loading as ks_loading
from oslo_messaging import conffixture
from oslo_upgradecheck import upgradecheck
from oslo_utils import timeutils

from cyborg.common import vocabulary
from cyborg import conf
from cyborg.clients import placement as placement_client
from cyborg import context as cyborg_context
from cyborg.cmd import status
from cyborg.db.queries import arq_binding
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.fixtures import messaging
from cyborg.tests.fixtures import placement
from cyborg.tests.fixtures import processes
from cyborg.tests.functional.services import test_arq_processes
from cyborg.tests.unit.db import records

Code = upgradecheck.Code


class MessageBrokerCheckTest(base.TestCase):

    def setUp(self):
        super().setUp()
        messaging.require_rabbit()
        self.messaging = self.useFixture(conffixture.ConfFixture(conf.CONF))

    def test_the_local_rabbitmq_answers(self):
        self.messaging.transport_url = messaging.rabbit_url()
        result = status.check_message_broker(conf.CONF)
        port = urllib.parse.urlsplit(messaging.rabbit_url()).port or 5672
        self.assertEqual(Code.SUCCESS, result.code, result.details)
        self.assertIn(':%d' % port, result.details)

    def test_a_broker_nobody_runs_fails_naming_it(self):
        port = processes.free_port()
        self.messaging.transport_url = (
            'rabbit://guest:guest@127.0.0.1:%d/' % port)
        result = status.check_message_broker(conf.CONF)
        self.assertEqual(Code.FAILURE, result.code)
        self.assertIn('127.0.0.1:%d' % port, result.details)
        self.assertIn('transport_url', result.details)

    def test_in_process_messaging_has_nothing_to_reach(self):
        self.messaging.transport_url = 'fake:/'
        result = status.check_message_broker(conf.CONF)
        self.assertEqual(Code.SUCCESS, result.code)


class PlacementCheckTest(base.TestCase):

    def test_unconfigured_is_a_warning(self):
        result = status.check_placement(conf.CONF)
        self.assertEqual(Code.WARNING, result.code)
        self.assertIn('[placement] is not configured', result.details)

    def test_the_real_placement_answers(self):
        self.useFixture(placement.PlacementFixture(serve=True))
        result = status.check_placement(conf.CONF)
        self.assertEqual((Code.SUCCESS, 'Placement answers.'),
                         (result.code, result.details))

    def test_a_placement_nobody_runs_fails(self):
        placement_client.register_token_endpoint_opts(conf.CONF)
        self.flags(auth_type='admin_token', token='t', group='placement')
        self.flags(endpoint='http://127.0.0.1:%d' % processes.free_port(),
                   group='placement')
        result = status.check_placement(conf.CONF)
        self.assertEqual(Code.FAILURE, result.code)


class NovaCheckTest(base.TestCase):

    def _configure(self, endpoint):
        conf.CONF.register_opts(
            ks_loading.get_auth_plugin_conf_options('admin_token'),
            group='nova')
        self.flags(auth_type='admin_token', token='nova-token',
                   endpoint=endpoint, group='nova')

    def test_unconfigured_is_a_warning(self):
        result = status.check_nova(conf.CONF)
        self.assertEqual(Code.WARNING, result.code)
        self.assertIn('[nova] is not configured', result.details)

    def test_an_answering_nova_succeeds(self):
        nova = self.useFixture(test_arq_processes.NovaStandIn())
        self._configure(nova.endpoint)
        result = status.check_nova(conf.CONF)
        self.assertEqual(Code.SUCCESS, result.code, result.details)
        self.assertEqual('GET', nova.requests[0][0])
        self.assertEqual('nova-token', nova.requests[0][2]['x-auth-token'])

    def test_a_nova_nobody_runs_fails(self):
        self._configure('http://127.0.0.1:%d/v2.1' % processes.free_port())
        result = status.check_nova(conf.CONF)
        self.assertEqual(Code.FAILURE, result.code)
        self.assertIn('ConnectFailure', result.details)


class StuckBindsCheckTestMixin:

    backend = None

    def setUp(self):
        super().setUp()
        self.useFixture(database.Database(self.backend))
        self.context = cyborg_context.get_admin_context()
        self.flags(bind_timeout=60, group='conductor')
        profile = records.make_device_profile(self.context)
        self.arqs = [records.make_arq(self.context, profile)
                     for _ in range(7)]
        for arq in self.arqs:
            arq.state = vocabulary.ARQState.BIND_STARTED
            arq.save(self.context)

    def test_binds_within_bind_timeout_succeed(self):
        result = status.check_stuck_binds(conf.CONF)
        self.assertEqual(Code.SUCCESS, result.code, result.details)

    def test_binds_older_than_bind_timeout_are_a_warning_naming_them(self):
        later = timeutils.utcnow() + datetime.timedelta(seconds=61)
        result = status.check_stuck_binds(conf.CONF, now=later)
        self.assertEqual(Code.WARNING, result.code)
        self.assertIn('7 ARQ(s)', result.details)
        shown = [arq.uuid for arq in self.arqs
                 if arq.uuid in result.details]
        self.assertEqual(status.STUCK_SHOWN, len(shown))
        self.assertEqual(7, len(arq_binding.binds_started_before(
            self.context, later)))


class StuckBindsCheckSQLiteTest(StuckBindsCheckTestMixin, base.TestCase):
    backend = 'sqlite'


class StuckBindsCheckMySQLTest(StuckBindsCheckTestMixin, base.TestCase):
    backend = 'mysql'
