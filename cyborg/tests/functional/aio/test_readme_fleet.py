"""README's "Fleet operations", run as written against cyborg-aio.

The blocks of that section are pasted, in order, into one bash (as README
asks) against an all-in-one of the default simulated fleet, after the
upload of README's "Programming an FPGA": a card faulted in the fleet file
leaves Placement's offer and comes back, a region is drained while it
holds an ARQ, a bitstream is bound twice with one download, and the
history tells it. Only the ports, the virtualenv's path and the state
directory are this test's.
"""

import os
import subprocess
import uuid

import fixtures
import requests

from cyborg.tests import base
from cyborg.tests.fixtures import processes
from cyborg.tests.functional.aio import test_program_aio
from cyborg.tests.functional.aio import test_readme

SECTION = 'Fleet operations'
START_TIMEOUT = 90
# The fault, its recovery (three reports 10 s apart) and the binds.
RUN_TIMEOUT = 240


class TestReadmeFleetOperations(base.TestCase):

    def setUp(self):
        super().setUp()
        self.api_port = processes.free_port()
        self.placement_port = processes.free_port()
        glance_port = processes.free_port()
        self.state_dir = os.path.join(
            self.useFixture(fixtures.TempDir()).path, 'state')
        self.aio = self.useFixture(processes.ServiceProcess('cyborg-aio', {
            'DEFAULT': {'host': 'aio-%s' % uuid.uuid4().hex[:8]},
            'api': {'port': self.api_port,
                    'fleet_page_port': processes.free_port()},
            'aio': {'state_dir': self.state_dir,
                    'placement_port': self.placement_port,
                    'glance_port': glance_port},
        }))
        processes.wait_until(self._fpga_offered,
                             'an FPGA provider in Placement', [self.aio],
                             timeout=START_TIMEOUT)
        self.environment = {name: value for name, value in os.environ.items()
                            if not name.startswith('OS_')}
        self.environment['OS_IMAGE_URL'] = 'http://127.0.0.1:%d' % glance_port

    def _fpga_offered(self):
        try:
            return requests.get(
                'http://127.0.0.1:%d/resource_providers' % self.placement_port,
                params={'resources': 'FPGA:1'},
                headers={'X-Auth-Token': 'admin',
                         'OpenStack-API-Version': 'placement 1.29'},
                timeout=10).json()['resource_providers']
        except (requests.ConnectionError, ValueError, KeyError):
            return None

    def _script(self):
        """README's upload, then the section's blocks as one script."""
        with open(test_program_aio.README, encoding='utf-8') as readme:
            blocks = test_readme.section_blocks(readme.read(), SECTION)
        self.assertEqual(5, len(blocks))
        section = '\n'.join(blocks)
        for old, new in (
                ('127.0.0.1:6666', '127.0.0.1:%d' % self.api_port),
                ('127.0.0.1:8778', '127.0.0.1:%d' % self.placement_port),
                ('.aio/fleet.yaml', os.path.join(self.state_dir,
                                                 'fleet.yaml')),
                ('.venv/bin/', test_program_aio.BIN + '/')):
            self.assertIn(old, section)
            section = section.replace(old, new)
        upload = test_program_aio.readme_commands(
            'http://127.0.0.1:%d' % self.api_port)
        # The program's answer has no line end: the section's output starts
        # on a line of its own, after a marker.
        return upload + '\necho\necho ---\n' + section

    def test_the_walk_through(self):
        result = subprocess.run(
            ['bash', '-euo', 'pipefail', '-c', self._script()],
            capture_output=True, text=True, cwd=test_program_aio.ROOT,
            env=self.environment, timeout=RUN_TIMEOUT)
        self.assertEqual(0, result.returncode, 'stdout:\n%s\nstderr:\n%s\n'
                         'cyborg-aio:\n%s' % (result.stdout, result.stderr,
                                              self.aio.log()))
        lines = result.stdout.split('\n---\n', 1)[1].splitlines()
        self.assertEqual(['degraded', 'healthy'], lines[:2])
        self.assertEqual(['draining', 'drained', 'None'], lines[2:5])
        binds = lines[5:9]
        self.assertEqual(['Bound', 'Bound'], binds[0::2])
        downloaded = [float(line.split()[-1]) for line in binds[1::2]]
        # Downloaded once (by the upload's program), never again.
        self.assertGreater(downloaded[0], 0)
        self.assertEqual(downloaded[0], downloaded[1])
        self.assertEqual('healthy: 3 healthy report(s) in a row', lines[9])
        events = [line.split()[1:] for line in lines[10:]]
        self.assertEqual([['undrain', 'ok'], ['delete', 'ok'],
                          ['drain', 'ok'], ['bind', 'ok']], events[:4])
