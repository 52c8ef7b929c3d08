"""cyborg-aio's ports: the metrics of its three services on the API's port,
the fleet page on a port of its own, and one line naming the option to
change when a port is taken; the same page port and line for cyborg-api.
"""

import collections
import socket
import subprocess

import fixtures
from prometheus_client import parser
import requests

from cyborg.tests import base
from cyborg.tests.fixtures import processes
from cyborg.tests.functional.aio import test_aio


def family_names(text):
    """The names of the families of a Prometheus text answer, in order."""
    return [family.name for family in
            parser.text_string_to_metric_families(text)]


def samples(text):
    """{(sample name, frozenset of labels): value} of a Prometheus answer."""
    return {(sample.name, frozenset(sample.labels.items())): sample.value
            for family in parser.text_string_to_metric_families(text)
            for sample in family.samples}


class TestDefaultPorts(test_aio.AllInOneProcess):

    def _get(self, port, path, **headers):
        return requests.get('http://127.0.0.1:%d%s' % (port, path),
                            headers=headers, timeout=10,
                            allow_redirects=False)

    def _reported(self):
        """The scrape once it counts the agent's first report."""
        response = self._get(self.api_port, '/metrics')
        if response.status_code != 200:
            return None
        values = samples(response.text)
        devices = ('cyborg_devices', frozenset({'type': 'FPGA',
                                                'host': self.host}.items()))
        # The agent times its report once the conductor has answered.
        sent = ('cyborg_agent_inventory_report_duration_seconds_count',
                frozenset({'outcome': 'sent'}.items()))
        if values.get(devices) == 2 and values.get(sent, 0) >= 1:
            return response.text
        return None

    def test_metrics_of_every_service_on_the_api_port(self):
        self._start()
        self._wait_for('answer from GET /v2', self._api_version)
        self._wait_for('the simulated fleet in GET /v2/devices',
                       self._devices)
        text = self._wait_for('the fleet in the scrape', self._reported)

        names = family_names(text)
        # Each family once: the three registries share the process's.
        self.assertEqual([], [name for name, count in
                              collections.Counter(names).items()
                              if count > 1])
        for name in ('cyborg_api_request_duration_seconds',
                     'cyborg_api_requests_in_flight',
                     'cyborg_arqs', 'cyborg_devices',
                     'cyborg_attach_handles', 'cyborg_conductor_fleet_read',
                     'cyborg_conductor_bind_duration_seconds',
                     'cyborg_conductor_inventory_report_duration_seconds',
                     'cyborg_conductor_rpc_errors',
                     'cyborg_agent_inventory_report_duration_seconds',
                     'cyborg_agent_prepared_arqs',
                     'cyborg_agent_rpc_errors', 'process_cpu_seconds'):
            self.assertIn(name, names)
        values = samples(text)
        # The agent's report, timed on both sides of the local dispatch.
        self.assertGreaterEqual(values[(
            'cyborg_agent_inventory_report_duration_seconds_count',
            frozenset({'outcome': 'sent'}.items()))], 1)
        self.assertGreaterEqual(values[(
            'cyborg_conductor_inventory_report_duration_seconds_count',
            frozenset({'outcome': 'ok'}.items()))], 1)
        self.assertGreaterEqual(values[(
            'cyborg_api_request_duration_seconds_count',
            frozenset({'method': 'GET', 'route': '/v2/devices',
                       'status': '200'}.items()))], 1)
        self.assertEqual(1, values[('cyborg_conductor_fleet_read',
                                    frozenset())])
        self.assertIn('serve Prometheus metrics at http://127.0.0.1:%d/'
                      'metrics' % self.api_port, self._log())

    def test_metrics_turned_off(self):
        with open(self.config_path, 'a') as config_file:
            config_file.write('[metrics]\nenabled = false\n')
        self._start()
        self._wait_for('the ready line',
                       lambda: 'cyborg all-in-one ready' in self._log())
        self.assertEqual(404, self._get(self.api_port,
                                        '/metrics').status_code)
        self.assertNotIn('Prometheus', self._log())
        self.assertIn('metrics (off)', self._log())

    def test_fleet_page_on_its_own_port(self):
        self._start()
        self._wait_for('answer from GET /v2', self._api_version)
        self._wait_for('the simulated fleet in GET /v2/devices',
                       self._devices)
        self.assertIn('The fleet page: http://127.0.0.1:%d/v2/fleet'
                      % self.fleet_page_port, self._log())

        page = self._get(self.fleet_page_port, '/v2/fleet',
                         Accept='text/html')
        self.assertEqual(200, page.status_code)
        self.assertTrue(page.headers['Content-Type'].startswith(
            'text/html'))
        self.assertIn('<html', page.text)
        data = self._get(self.fleet_page_port, '/v2/fleet?refresh=1')
        self.assertEqual(200, data.status_code, data.text)
        self.assertEqual(1, data.json()['summary']['hosts'])
        self.assertEqual(200, self._get(self.fleet_page_port,
                                        '/fleet/').status_code)
        root = self._get(self.fleet_page_port, '/?refresh=5')
        self.assertEqual(302, root.status_code)
        self.assertEqual('/v2/fleet?refresh=5', root.headers['Location'])
        # Nothing else of the API answers there.
        for path in ('/v2/devices', '/v2', '/metrics', '/v2/fleetx'):
            other = self._get(self.fleet_page_port, path)
            self.assertEqual(404, other.status_code, path)
            self.assertIn('the API is on port %d' % self.api_port,
                          other.text)
        # The API's port still serves the page too.
        self.assertEqual(200, self._get(self.api_port, '/v2/fleet',
                                        Accept='text/html').status_code)


class TestTakenPorts(test_aio.AllInOneProcess):

    def _exits_naming(self, port, service, option):
        """Start with ``port`` taken: exit status 1 and one error line."""
        with socket.socket() as occupant:
            occupant.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            occupant.bind(('127.0.0.1', port))
            occupant.listen()
            self._start()
            try:
                exit_code = self.process.wait(test_aio.START_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.fail('cyborg-aio kept running with port %d taken'
                          % port)
        self.assertEqual(1, exit_code)
        log = self._log()
        errors = [line for line in log.splitlines() if ' ERROR ' in line]
        self.assertEqual(1, len(errors), log)
        self.assertTrue(errors[0].endswith(
            'The all-in-one failed to start: %s cannot listen on '
            '127.0.0.1:%d: the port is already in use; set %s to another '
            'port' % (service, port, option)), errors[0])
        self.assertNotIn('Traceback', log)
        return log

    def test_api_port(self):
        log = self._exits_naming(self.api_port, 'cyborg-api', '[api] port')
        # What had started before the API, Placement and Glance included,
        # was stopped.
        self.assertIn('placement on 127.0.0.1:%d stopped'
                      % self.placement_port, log)
        self.assertIn('glance on 127.0.0.1:%d stopped' % self.glance_port,
                      log)
        self.assertIn('fleet page on 127.0.0.1:%d stopped'
                      % self.fleet_page_port, log)

    def test_fleet_page_port(self):
        self._exits_naming(self.fleet_page_port, 'fleet page',
                           '[api] fleet_page_port')

    def test_placement_port(self):
        self._exits_naming(self.placement_port, 'placement',
                           '[aio] placement_port')

    def test_glance_port(self):
        log = self._exits_naming(self.glance_port, 'glance',
                                 '[aio] glance_port')
        self.assertIn('placement on 127.0.0.1:%d stopped'
                      % self.placement_port, log)


class TestCyborgApiPorts(base.TestCase):
    """cyborg-api (not the all-in-one) with [api] fleet_page_port set."""

    def setUp(self):
        super().setUp()
        self.directory = self.useFixture(fixtures.TempDir()).path
        self.api_port = test_aio.free_port()
        self.page_port = test_aio.free_port()
        self.service = processes.ServiceProcess('cyborg-api', {
            'DEFAULT': {'transport_url': 'fake://',
                        'auth_strategy': 'noauth'},
            'database': {'connection': 'sqlite:///%s/cyborg.sqlite'
                                       % self.directory},
            'api': {'host_ip': '127.0.0.1', 'port': self.api_port,
                    'fleet_page_port': self.page_port},
            'metrics': {'enabled': 'true'},
        })

    def test_page_port_and_metrics(self):
        self.useFixture(self.service)
        page = processes.wait_until(
            lambda: _answer('http://127.0.0.1:%d/v2/fleet' % self.page_port,
                            Accept='text/html'),
            'the fleet page', [self.service])
        self.assertEqual(200, page.status_code)
        self.assertIn('<html', page.text)
        self.assertEqual(404, _answer('http://127.0.0.1:%d/v2/devices'
                                      % self.page_port).status_code)
        self.assertEqual(200, _answer('http://127.0.0.1:%d/metrics'
                                      % self.api_port).status_code)
        log = self.service.log()
        self.assertIn('The fleet page: http://127.0.0.1:%d/v2/fleet'
                      % self.page_port, log)
        self.assertIn('cyborg-api serves Prometheus metrics at '
                      'http://127.0.0.1:%d/metrics' % self.api_port, log)

    def _exits_naming(self, port, service, option):
        with socket.socket() as occupant:
            occupant.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            occupant.bind(('127.0.0.1', port))
            occupant.listen()
            self.useFixture(self.service)
            try:
                exit_code = self.service.process.wait(test_aio.START_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.fail('cyborg-api kept running with port %d taken'
                          % port)
        self.assertEqual(1, exit_code)
        log = self.service.log()
        errors = [line for line in log.splitlines() if ' ERROR ' in line]
        self.assertEqual(1, len(errors), log)
        self.assertTrue(errors[0].endswith(
            'cyborg-api cannot start: %s cannot listen on 127.0.0.1:%d: the '
            'port is already in use; set %s to another port'
            % (service, port, option)), errors[0])
        self.assertNotIn('Traceback', log)

    def test_api_port_taken(self):
        self._exits_naming(self.api_port, 'cyborg-api', '[api] port')

    def test_page_port_taken(self):
        self._exits_naming(self.page_port, 'fleet page',
                           '[api] fleet_page_port')


def _answer(url, **headers):
    """The answer to a GET of ``url``, or None while nothing listens."""
    try:
        return requests.get(url, headers=headers, timeout=10,
                            allow_redirects=False)
    except requests.ConnectionError:
        return None
