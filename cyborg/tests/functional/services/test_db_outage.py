"""A database outage seen through cyborg-api and cyborg-conductor processes.

Each class runs its own MariaDB or PostgreSQL server
(``cyborg.tests.fixtures.db_server``), so stopping it touches no other
test. While it is down, a read the API makes itself (GET) and a write the
conductor makes (POST, over RPC) answer 503 with Cyborg's error body and
Retry-After, promptly; once it is back, the same requests succeed without
restarting either service.
"""

import http.client
import json
import re
import time
import uuid

import fixtures
import sqlalchemy as sa
from oslo_db.sqlalchemy import engines
from testtools import content
from testtools import content_type

from cyborg import conf
from cyborg import context as cyborg_context
from cyborg import exception
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.db import migration
from cyborg.tests import base
from cyborg.tests.fixtures import db_server
from cyborg.tests.fixtures import messaging
from cyborg.tests.fixtures import processes

# The client gives up after this many seconds: an answer within it is what
# the test asserts, a missing one is a hang.
ANSWER_TIMEOUT = 15
RECOVERY_TIMEOUT = 20


class DatabaseOutageMixin:

    backend = None

    def setUp(self):
        super().setUp()
        self.server = self.useFixture(db_server.DatabaseServer(self.backend))
        self.engine = engines.create_engine(self.server.url, max_retries=0,
                                             mysql_sql_mode='TRADITIONAL')
        self.addCleanup(self.engine.dispose)
        migration.upgrade('head', engine=self.engine)
        self.rabbit = rabbit = self.useFixture(messaging.RabbitIsolation())
        suffix = uuid.uuid4().hex[:8]
        self.api_port = processes.free_port()
        common = {
            'transport_url': rabbit.transport_url,
            'control_exchange': rabbit.control_exchange,
            'report_interval': 1,
            'graceful_shutdown_timeout': 5,
            'rpc_response_timeout': 10,
            'debug': True,
            'state_path': self.useFixture(fixtures.TempDir()).path,
        }
        database = {'connection': self.server.url}
        self.conductor = self.useFixture(processes.ServiceProcess(
            'cyborg-conductor', {
                'DEFAULT': dict(common, host='conductor-%s' % suffix),
                'database': database,
                # The sweep and the pruner run during the outage too.
                'conductor': {'bind_sweep_interval': 1,
                              'history_prune_interval': 1},
            }))
        self.api_options = {
            'DEFAULT': dict(common, host='api-%s' % suffix,
                            auth_strategy='noauth'),
            'api': {'host_ip': '127.0.0.1', 'port': self.api_port,
                    'api_workers': 2, 'retry_after': 3},
            'database': database,
        }
        self.api = self.useFixture(processes.ServiceProcess(
            'cyborg-api', self.api_options))
        self.services = [self.conductor, self.api]
        self.conductor_host = 'conductor-%s' % suffix
        self.addDetail('database-server-log', content.Content(
            content_type.UTF8_TEXT,
            lambda: [self.server.log().encode('utf-8')]))

    def _request(self, method, path, body=None, port=None):
        """(status, body, Retry-After, seconds taken) of one request."""
        started = time.monotonic()
        headers = {'Accept': 'application/json'}
        data = None
        if body is not None:
            headers['Content-Type'] = 'application/json'
            data = json.dumps(body)
        connection = http.client.HTTPConnection(
            '127.0.0.1', port or self.api_port, timeout=ANSWER_TIMEOUT)
        try:
            connection.request(method, path, body=data, headers=headers)
            response = connection.getresponse()
            raw = response.read()
        finally:
            connection.close()
        return (response.status, json.loads(raw) if raw else None,
                response.getheader('Retry-After'),
                time.monotonic() - started)

    def _profile(self, name):
        return [{'name': name, 'groups': [{'resources:FPGA': '1'}]}]

    def _answered(self, method, path, body=None, port=None):
        try:
            return self._request(method, path, body, port)[0]
        except OSError:
            return None

    def _assert_unavailable(self, method, path, body=None, port=None):
        self._assert_503(method, path, body, port,
                         ('The database is unavailable',))

    def _assert_write_unavailable(self, path, body):
        """A write the conductor was asked for: refused by a conductor
        that lost the database, or unanswered by one that stopped taking
        requests for that reason (the only one: nobody else serves it)."""
        self._assert_503('POST', path, body, None,
                         ('The database is unavailable',
                          'did not answer in time'))

    def _assert_503(self, method, path, body, port, messages):
        status, decoded, retry_after, _ = self._request(method, path, body,
                                                        port)
        self.assertEqual(503, status, '%s %s: %r\n%s' % (
            method, path, decoded, processes.log_tails(self.services)))
        self.assertEqual('3', retry_after)
        self.assertEqual(['error_message'], list(decoded))
        fault = json.loads(decoded['error_message'])
        self.assertEqual('Server', fault['faultcode'])
        self.assertTrue(any(message in fault['faultstring']
                            for message in messages), fault)
        self.assertNotIn('Traceback', fault['faultstring'])

    def _conductor_beats(self):
        query = sa.text('SELECT count(*) FROM services WHERE host = :host')
        with self.engine.connect() as connection:
            return connection.execute(
                query, {'host': self.conductor_host}).scalar()

    def test_outage_answers_503_and_recovers_by_itself(self):
        # The conductor consumes its topic once it has beaten.
        processes.wait_until(self._conductor_beats, 'the conductor heartbeat',
                             self.services, timeout=30)
        processes.wait_until(
            lambda: self._answered('GET', '/v2/device_profiles') == 200,
            'cyborg-api answering', self.services, timeout=30)
        self.assertEqual(201, self._request(
            'POST', '/v2/device_profiles', self._profile('before'))[0])

        # A restart with no request in between: the connections pooled
        # before it are stale, and the first requests after it succeed.
        self.server.stop()
        self.server.start()
        self.assertEqual(200, self._request('GET', '/v2/device_profiles')[0])
        self.assertEqual(201, self._request(
            'POST', '/v2/device_profiles', self._profile('restarted'))[0])

        self.server.stop()
        # A read of the API's own, then a write the conductor makes.
        self._assert_unavailable('GET', '/v2/device_profiles')
        self._assert_write_unavailable('/v2/device_profiles',
                                       self._profile('during'))
        self._assert_unavailable('GET', '/v2/device_profiles')
        # An API process started during the outage does not wait for the
        # database either.
        late_port = processes.free_port()
        late_options = dict(self.api_options, api=dict(
            self.api_options['api'], port=late_port))
        late_api = self.useFixture(processes.ServiceProcess(
            'cyborg-api', late_options))
        processes.wait_until(
            lambda: self._answered('GET', '/v2', port=late_port) == 200,
            'the API started during the outage', [late_api], timeout=30)
        self._assert_unavailable('GET', '/v2/device_profiles', port=late_port)

        self.server.start()
        processes.wait_until(
            lambda: self._answered('GET', '/v2/device_profiles') == 200,
            'GET /v2/device_profiles after the database came back',
            self.services, timeout=RECOVERY_TIMEOUT)
        processes.wait_until(
            lambda: self._answered('POST', '/v2/device_profiles',
                                   self._profile('after')) == 201,
            'POST /v2/device_profiles after the database came back',
            self.services, timeout=RECOVERY_TIMEOUT)
        status, decoded, _, _ = self._request('GET', '/v2/device_profiles')
        self.assertEqual(200, status)
        # 'during' was refused, or left unanswered by the conductor that
        # stopped taking requests: then it may have been made when the
        # database came back within the call's timeout.
        self.assertEqual(
            ['after', 'before', 'restarted'],
            sorted(profile['name'] for profile in decoded['device_profiles']
                   if profile['name'] != 'during'))

        self.assertEqual(200, self._request('GET', '/v2/device_profiles',
                                            port=late_port)[0])
        # The conductor logs the outage (its heartbeat, the 503s it sent
        # back) without a traceback either.
        self.assertNotIn('Traceback', self.conductor.log())
        for api in (self.api, late_api):
            api_log = api.log()
            self.assertNotIn('answered 500', api_log)
            self.assertNotIn('Traceback', api_log)
            self.assertIn('answered 503: The database is unavailable',
                          api_log)
        self.assertTrue(self.api.is_running() and self.conductor.is_running())


    def test_an_outage_is_logged_once_as_it_starts_and_once_as_it_ends(self):
        processes.wait_until(self._conductor_beats, 'the conductor heartbeat',
                             self.services, timeout=30)
        processes.wait_until(
            lambda: self._answered('GET', '/v2/device_profiles') == 200,
            'cyborg-api answering', self.services, timeout=30)
        self.useFixture(messaging.Messaging(
            conf.CONF, self.rabbit.transport_url,
            self.rabbit.control_exchange))
        conductors = conductor_rpcapi.ConductorAPI()
        context = cyborg_context.get_admin_context()

        self.server.stop()
        # Requests the conductor serves meanwhile, one of an endpoint that
        # declares no expected exception (an agent's heartbeat), while its
        # heartbeat, sweep and pruner fail every second.
        for _ in range(3):
            self._assert_write_unavailable('/v2/device_profiles',
                                           self._profile('during'))
            # Refused, or unanswered once the conductor stopped taking
            # requests (no other one serves them).
            self.assertRaises(exception.ServiceUnavailable,
                              conductors.report_heartbeat, context,
                              'compute-x', 'cyborg-agent', 'cyborg-agent',
                              timeout=2)
        time.sleep(3)
        self.server.start()
        processes.wait_until(
            lambda: 'End of the outage of the database' in
            self.conductor.log(), 'the conductor seeing the database back',
            self.services, timeout=RECOVERY_TIMEOUT)
        self.assertEqual(201, self._request(
            'POST', '/v2/device_profiles', self._profile('after'))[0])

        log = self.conductor.log()
        warnings = [line for line in log.splitlines()
                    if ' WARNING ' in line and 'database' in line.lower()]
        self.assertEqual(2, len(warnings), log)
        self.assertIn('Outage of the database: The database is '
                      'unavailable', warnings[0])
        ended = re.search(r'End of the outage of the database after '
                          r'[\d.]+ s; (\d+) tries failed', warnings[1])
        self.assertIsNotNone(ended, warnings[1])
        # Its own heartbeats every second, at least.
        self.assertGreaterEqual(int(ended.group(1)), 3, warnings[1])
        self.assertNotIn('Traceback', log)
        self.assertEqual([], re.findall(r'.* \d+ ERROR .*', log))


class TestDatabaseOutageMySQL(DatabaseOutageMixin, base.TestCase):
    backend = 'mysql'


class TestDatabaseOutagePostgreSQL(DatabaseOutageMixin, base.TestCase):
    backend = 'postgresql'
