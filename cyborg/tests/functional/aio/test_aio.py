"""cyborg-aio as a real process: it comes up with Placement, Glance,
conductor, agent and API, and a SIGINT stops all of it cleanly.
"""

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import uuid

import fixtures
import requests
from testtools import content

from cyborg.tests import base

START_TIMEOUT = 60
STOP_TIMEOUT = 10

INTEL = 'fpga-0000:10:00.0'
XILINX = 'fpga-0000:11:00.0'
T4 = 'gpu-0000:12:00.0'
# The deployables of the default fleet (cyborg/aio/fleet.yaml): name ->
# (parent, root, has a resource provider). Each card is a root without
# accelerators; its regions or vGPU types below it are the providers; a
# region's PF is below the region and the PF's VFs below the PF.
FLEET_TREE = {
    INTEL: (None, None, False),
    INTEL + '-region0': (INTEL, INTEL, True),
    INTEL + '-region0-pf0': (INTEL + '-region0', INTEL, False),
    INTEL + '-region1': (INTEL, INTEL, True),
    INTEL + '-region1-pf0': (INTEL + '-region1', INTEL, False),
    XILINX: (None, None, False),
    XILINX + '-region0': (XILINX, XILINX, True),
    XILINX + '-region0-pf0': (XILINX + '-region0', XILINX, False),
    **{INTEL + '-region0-pf0-vf%d' % vf: (INTEL + '-region0-pf0', INTEL,
                                          False) for vf in range(4)},
    **{INTEL + '-region1-pf0-vf%d' % vf: (INTEL + '-region1-pf0', INTEL,
                                          False) for vf in range(2)},
    T4: (None, None, False),
    T4 + '-nvidia-222': (T4, T4, True),
    T4 + '-nvidia-223': (T4, T4, True),
}


def free_port():
    """A TCP port of 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


class AllInOneProcess(base.TestCase):
    """A cyborg-aio process to start (``_start``) on free ports, its own
    config file and state directory; the defaults otherwise."""

    def setUp(self):
        super().setUp()
        self.directory = self.useFixture(fixtures.TempDir()).path
        self.state_dir = os.path.join(self.directory, 'state')
        self.api_port = free_port()
        self.placement_port = free_port()
        self.glance_port = free_port()
        self.fleet_page_port = free_port()
        self.host = 'aio-%s' % uuid.uuid4().hex[:8]
        self.config_path = os.path.join(self.directory, 'aio.conf')
        with open(self.config_path, 'w') as config_file:
            config_file.write(
                '[DEFAULT]\nhost = %s\n'
                '[api]\nport = %d\nfleet_page_port = %d\n'
                '[aio]\nplacement_port = %d\nglance_port = %d\n'
                % (self.host, self.api_port, self.fleet_page_port,
                   self.placement_port, self.glance_port))
        self.log_path = os.path.join(self.directory, 'aio.log')
        self.process = None
        # Added as a detail before the temporary directory goes away, so a
        # failing test shows what the all-in-one logged.
        self.addCleanup(self._attach_log)

    def _log(self):
        try:
            with open(self.log_path, encoding='utf-8',
                      errors='replace') as log_file:
                return log_file.read()
        except FileNotFoundError:
            return ''

    def _attach_log(self):
        self.addDetail('cyborg-aio-log', content.text_content(self._log()))

    def _config_files(self):
        """The files the all-in-one reads, in order: a later one wins."""
        return [self.config_path]

    def _start(self):
        script = os.path.join(os.path.dirname(sys.executable), 'cyborg-aio')
        # The state dir comes from the environment, the ports from the file.
        environment = dict(os.environ, CYBORG_AIO_STATE_DIR=self.state_dir)
        command = [script]
        for path in self._config_files():
            command += ['--config-file', path]
        with open(self.log_path, 'wb') as log_file:
            self.process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL, stdout=log_file,
                stderr=subprocess.STDOUT, cwd=self.directory,
                env=environment, start_new_session=True)
        self.addCleanup(self._kill)

    def _kill(self):
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def _wait_for(self, what, probe):
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.fail('cyborg-aio exited with %s while waiting for %s'
                          % (self.process.returncode, what))
            result = probe()
            if result:
                return result
            time.sleep(0.2)
        self.fail('no %s after %d s' % (what, START_TIMEOUT))

    def _api_version(self):
        try:
            response = requests.get(
                'http://127.0.0.1:%d/v2' % self.api_port, timeout=5)
        except requests.ConnectionError:
            return None
        return response if response.status_code == 200 else None

    def _services(self):
        database = os.path.join(self.state_dir, 'cyborg.sqlite')
        connection = sqlite3.connect(database)
        try:
            rows = connection.execute(
                'SELECT binary, report_count FROM services '
                'WHERE host = ?', (self.host,)).fetchall()
        finally:
            connection.close()
        return {binary: count for binary, count in rows}

    def _both_heartbeats(self):
        services = self._services()
        return services if len(services) == 2 else None

    def _devices(self):
        response = requests.get(
            'http://127.0.0.1:%d/v2/devices' % self.api_port, timeout=5)
        return response.json()['devices'] if response.ok else None

    def _deployable_tree(self):
        """{name: (parent name, root name, has rp_uuid)} through the API,
        the database naming the ids the API shows."""
        response = requests.get(
            'http://127.0.0.1:%d/v2/deployables' % self.api_port, timeout=5)
        self.assertEqual(200, response.status_code, response.text)
        database = os.path.join(self.state_dir, 'cyborg.sqlite')
        connection = sqlite3.connect(database)
        try:
            name_of_id = dict(connection.execute(
                'SELECT id, name FROM deployables').fetchall())
        finally:
            connection.close()
        name_of_id[None] = None
        return {d['name']: (name_of_id[d['parent_id']],
                            name_of_id[d['root_id']], d['rp_uuid'] is not None)
                for d in response.json()['deployables']}

    def _placement(self, path, **headers):
        return requests.get(
            'http://127.0.0.1:%d%s' % (self.placement_port, path),
            headers=dict(headers, **{'X-Auth-Token': 'admin'}), timeout=5)

    def _children_in_placement(self, compute_node):
        tree = self._placement(
            '/resource_providers?in_tree=%s' % compute_node,
            **{'OpenStack-API-Version': 'placement 1.39'})
        return sorted(rp['name'] for rp in tree.json()['resource_providers']
                      if rp['parent_provider_uuid'] == compute_node)


class TestAllInOne(AllInOneProcess):

    def test_comes_up_and_stops_on_sigint(self):
        self._start()

        version = self._wait_for('answer from GET /v2',
                                 self._api_version).json()
        self.assertEqual('v2.0', version['id'])
        self.assertEqual('CURRENT', version['status'])
        self.assertEqual('2.0', version['min_version'])

        services = self._wait_for('heartbeats of conductor and agent',
                                  self._both_heartbeats)
        self.assertEqual({'cyborg-conductor', 'cyborg-agent'}, set(services))
        self.assertTrue(all(count >= 1 for count in services.values()))

        # The agent's first report reaches the conductor through local
        # dispatch: the default simulated fleet (cyborg/aio/fleet.yaml)
        # shows in the API and each of its deployables with accelerators
        # becomes a provider under the compute node.
        devices = self._wait_for('the simulated fleet in GET /v2/devices',
                                 self._devices)
        self.assertEqual(
            [('FPGA', '0x8086', self.host), ('FPGA', '0x10ee', self.host),
             ('GPU', '0x10de', self.host)],
            [(d['type'], d['vendor'], d['hostname']) for d in devices])
        self.assertNotIn('Inventory report of', self._log())
        # The report is one transaction: every deployable is there too.
        self.assertEqual(FLEET_TREE, self._deployable_tree())

        root = self._placement('/')
        self.assertEqual(200, root.status_code)
        self.assertEqual('1.39', root.json()['versions'][0]['max_version'])
        providers = self._placement(
            '/resource_providers?name=%s' % self.host,
            **{'OpenStack-API-Version': 'placement 1.39'})
        self.assertEqual(200, providers.status_code, providers.text)
        self.assertEqual(
            [self.host],
            [rp['name'] for rp in providers.json()['resource_providers']])
        compute_node = providers.json()['resource_providers'][0]['uuid']
        # The conductor syncs Placement after it has committed the report,
        # so the provider may come a moment after the device shows.
        expected = sorted('%s_%s' % (self.host, name) for name in (
            'fpga-0000:10:00.0-region0', 'fpga-0000:10:00.0-region1',
            'fpga-0000:11:00.0-region0', 'gpu-0000:12:00.0-nvidia-222',
            'gpu-0000:12:00.0-nvidia-223'))
        self.assertEqual(expected, sorted(
            '%s_%s' % (self.host, name)
            for name, (_, _, provider) in FLEET_TREE.items() if provider))
        children = self._wait_for(
            'the fleet\'s providers under the compute node',
            lambda: self._children_in_placement(compute_node) == expected)
        self.assertTrue(children)
        self.assertTrue(os.path.exists(
            os.path.join(self.state_dir, 'placement.sqlite')))

        started = time.monotonic()
        self.process.send_signal(signal.SIGINT)
        try:
            exit_code = self.process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.fail('cyborg-aio still running %d s after SIGINT'
                      % STOP_TIMEOUT)
        self.assertEqual(0, exit_code)
        self.assertLess(time.monotonic() - started, STOP_TIMEOUT)
        self.assertIn('cyborg all-in-one stopped', self._log())
