"""README's "A first hour" and "When a bind fails" run as written against
an all-in-one.

The literal blocks of those sections are the commands a new user copies:
each is run with bash (``set -euo pipefail``) against a ``cyborg-aio`` of
the default simulated fleet, with only the ports of the API and Placement
and the path of ``.venv/bin/openstack`` replaced by this test's. A README
change that breaks a step fails here.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import requests

from cyborg.tests import base
from cyborg.tests.fixtures import processes

README = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..',
                      'README.rst')
SECTION = 'A first hour'
BIND_FAILS = 'When a bind fails'
START_TIMEOUT = 90
RUN_TIMEOUT = 120


def section_blocks(text, title):
    """The literal blocks (``::`` then indented lines) of section ``title``."""
    start = text.index('\n%s\n%s\n' % (title, '=' * len(title)))
    following = re.search(r'\n[^\n]+\n=+\n', text[start + len(title) + 2:])
    end = start + len(title) + 2 + following.start() if following else None
    section = text[start:end]
    blocks = re.findall(r'::\n\n((?:    [^\n]*\n|\n)+)', section)
    return ['\n'.join(line[4:] for line in block.splitlines()) + '\n'
            for block in blocks]


class TestReadmeFirstHour(base.TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.directory = tempfile.mkdtemp(prefix='cyborg-readme-')
        cls.api_port = processes.free_port()
        cls.placement_port = processes.free_port()
        cls.aio = processes.ServiceProcess('cyborg-aio', {
            'api': {'port': cls.api_port,
                    'fleet_page_port': processes.free_port()},
            'aio': {'state_dir': os.path.join(cls.directory, 'state'),
                    'placement_port': cls.placement_port,
                    'glance_port': processes.free_port()},
        })
        try:
            cls.aio.setUp()
            cls._wait_for_fleet()
        except BaseException:
            cls.aio.cleanUp()
            shutil.rmtree(cls.directory, ignore_errors=True)
            raise

    @classmethod
    def tearDownClass(cls):
        cls.aio.cleanUp()
        shutil.rmtree(cls.directory, ignore_errors=True)
        super().tearDownClass()

    @classmethod
    def _wait_for_fleet(cls):
        """Until Placement holds a provider with a free FPGA."""
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if not cls.aio.is_running():
                raise AssertionError('cyborg-aio exited:\n%s' % cls.aio.log())
            try:
                providers = requests.get(
                    'http://127.0.0.1:%d/resource_providers' %
                    cls.placement_port,
                    params={'resources': 'FPGA:1'},
                    headers={'X-Auth-Token': 'admin',
                             'OpenStack-API-Version': 'placement 1.29'},
                    timeout=10).json()['resource_providers']
                if providers:
                    return
            except (requests.ConnectionError, ValueError, KeyError):
                pass
            time.sleep(0.3)
        raise AssertionError('no FPGA provider in Placement within %d s:\n%s'
                             % (START_TIMEOUT, cls.aio.log()))

    def _run(self, block):
        """Run ``block`` with this test's ports; its stdout."""
        script = (block
                  .replace('127.0.0.1:6666', '127.0.0.1:%d' % self.api_port)
                  .replace('127.0.0.1:8778',
                           '127.0.0.1:%d' % self.placement_port)
                  .replace('.venv/bin/openstack',
                           os.path.join(os.path.dirname(sys.executable),
                                        'openstack')))
        result = subprocess.run(
            ['bash', '-c', 'set -euo pipefail\n' + script],
            capture_output=True, text=True, timeout=RUN_TIMEOUT,
            cwd=self.directory)
        self.assertEqual(0, result.returncode, 'stdout:\n%s\nstderr:\n%s\n'
                         'cyborg-aio:\n%s' % (result.stdout, result.stderr,
                                              self.aio.log()))
        return result.stdout

    def test_the_section_has_the_two_walk_throughs(self):
        with open(README) as readme:
            blocks = section_blocks(readme.read(), SECTION)
        self.assertEqual(2, len(blocks))

    def test_walk_throughs(self):
        with open(README) as readme:
            curl_block, cli_block = section_blocks(readme.read(), SECTION)
        lines = self._run(curl_block).splitlines()
        # The profile created, the bind accepted, the ARQ Bound with a PCI
        # handle, unbind accepted, ARQ and profile deleted.
        self.assertEqual('one-fpga', json.loads(lines[0])['name'])
        self.assertEqual(['202', 'Bound'], lines[1:3])
        self.assertRegex(lines[3], r"^\{'bus': '[0-9a-f]{2}', 'device': "
                                   r"'[0-9a-f]{2}', 'domain': '[0-9a-f]{4}',"
                                   r" 'function': '[0-7]'\}$")
        self.assertEqual(['202', '204', '204'], lines[4:])
        arqs = requests.get('http://127.0.0.1:%d/v2/accelerator_requests'
                            % self.api_port, timeout=10).json()['arqs']
        self.assertEqual([], arqs)

        output = self._run(cli_block)
        self.assertIn('fpga-0000:10:00.0-region0', output)
        self.assertIn("[{'resources:FPGA': '1'}]", output)
        profiles = requests.get('http://127.0.0.1:%d/v2/device_profiles'
                                % self.api_port, timeout=10).json()
        self.assertEqual([], profiles['device_profiles'])

    def test_a_failed_bind_and_its_reason(self):
        with open(README) as readme:
            blocks = section_blocks(readme.read(), BIND_FAILS)
        self.assertEqual(1, len(blocks))
        lines = self._run(blocks[0]).splitlines()
        # 2.0 has the state only; 2.3 says why.
        self.assertEqual(['BindFailed', 'None'], lines[:2])
        self.assertEqual(3, len(lines), lines)
        self.assertIn('offers VGPU, not the FPGA', lines[2])
        # It cleaned up after itself.
        for path, key in (('accelerator_requests', 'arqs'),
                          ('device_profiles', 'device_profiles')):
            self.assertEqual([], requests.get(
                'http://127.0.0.1:%d/v2/%s' % (self.api_port, path),
                timeout=10).json()[key])
