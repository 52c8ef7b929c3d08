"""cyborg-api, -conductor and -agent as separate processes over RabbitMQ and MariaDB."""

import http.client
import time
import uuid

import fixtures

from cyborg import conf
from cyborg import context as cyborg_context
from cyborg import exception
from cyborg import objects
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.fixtures import messaging
from cyborg.tests.fixtures import processes

START_TIMEOUT = 30


class TestServiceProcesses(base.TestCase):
    """Heartbeats reach the database through the conductor; SIGTERM is clean."""

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(
            database.Database(backend='mysql', schema='migrations'))
        rabbit = self.useFixture(messaging.RabbitIsolation())
        suffix = uuid.uuid4().hex[:8]
        self.agent_host = 'agent-%s' % suffix
        self.conductor_host = 'conductor-%s' % suffix
        self.context = cyborg_context.get_admin_context()
        self.common = {
            'transport_url': rabbit.transport_url,
            'control_exchange': rabbit.control_exchange,
            'report_interval': 1,
            'graceful_shutdown_timeout': 8,
            'debug': True,
            'state_path': self.useFixture(fixtures.TempDir()).path,
        }
        self.processes = []

    def _start(self, script, default=None, **groups):
        options = {'DEFAULT': dict(self.common, **(default or {}))}
        options.update(groups)
        process = self.useFixture(processes.ServiceProcess(script, options))
        self.processes.append(process)
        return process

    def _wait_for_service(self, host, binary, minimum_count=1):
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            for process in self.processes:
                if not process.is_running():
                    self.fail('%s exited with %s while waiting for %s on %s'
                              % (process.script, process.process.returncode,
                                 binary, host))
            try:
                service = objects.Service.get_by_host_and_binary(
                    self.context, host, binary)
            except exception.ResourceNotFound:
                service = None
            if service is not None and service.report_count >= minimum_count:
                return service
            time.sleep(0.2)
        self.fail('no heartbeat of %s on %s with report_count >= %d after '
                  '%d s' % (binary, host, minimum_count, START_TIMEOUT))

    def test_heartbeats_api_and_clean_shutdown(self):
        self._start('cyborg-conductor',
                    default={'host': self.conductor_host},
                    database={'connection': self.database.url})
        # No [database] section: the agent reaches the database only
        # through the conductor.
        self._start('cyborg-agent', default={'host': self.agent_host},
                    agent={'enabled_drivers': 'fake_driver'})
        api_port = processes.free_port()
        self._start('cyborg-api',
                    default={'host': 'api-' + self.agent_host,
                             'auth_strategy': 'noauth'},
                    api={'host_ip': '127.0.0.1', 'port': api_port},
                    database={'connection': self.database.url})

        agent = self._wait_for_service(self.agent_host, 'cyborg-agent')
        later = self._wait_for_service(self.agent_host, 'cyborg-agent',
                                       minimum_count=agent.report_count + 1)
        self.assertGreater(later.report_count, agent.report_count)
        self.assertEqual('cyborg-agent', later.topic)
        self.assertTrue(later.is_up(conf.CONF.service_down_time))
        conductor = self._wait_for_service(self.conductor_host,
                                           'cyborg-conductor')
        self.assertEqual('cyborg-conductor', conductor.topic)

        self._assert_api_answers(api_port)

        for process in self.processes:
            exit_code, seconds = process.stop(timeout=10)
            log = process.log()
            self.assertEqual(0, exit_code, process.script)
            self.assertLess(seconds, 10, process.script)
            self.assertNotIn('Traceback', log, process.script)
            self.assertIn('stopped', log, process.script)

    def _assert_api_answers(self, port):
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            connection = http.client.HTTPConnection('127.0.0.1', port,
                                                    timeout=5)
            try:
                connection.request('GET', '/v2')
                status = connection.getresponse().status
                break
            except OSError:
                # Not listening yet.
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
            finally:
                connection.close()
        self.assertEqual(200, status)


class TestAgentStartUpErrors(base.TestCase):

    def test_unknown_driver_stops_the_agent_with_one_clear_line(self):
        agent = self.useFixture(processes.ServiceProcess('cyborg-agent', {
            'DEFAULT': {'transport_url': 'fake:/', 'host': 'agent-x',
                        'state_path': self.useFixture(fixtures.TempDir()).path},
            'agent': {'enabled_drivers': 'fake_driver,no_such_driver'},
        }))

        exit_code = agent.process.wait(START_TIMEOUT)

        log = agent.log()
        self.assertEqual(1, exit_code)
        self.assertIn('cannot start', log)
        self.assertIn('no_such_driver', log)
        self.assertNotIn('Traceback', log)
