"""README's programming commands, run as written against cyborg-aio.

The all-in-one runs as a process with its default simulated fleet
(cyborg/aio/fleet.yaml) on free ports; README.rst's three commands
(``cyborg-bitstream upload``, the curl finding the region, the curl PATCH
programming it) run in bash from the top of the checkout, only the ports
and the virtualenv's path swapped. The region then holds the bitstream; an
image without the FPGA tag and a bitstream of another vendor are refused
and leave its ``bitstream_id`` as it was.
"""

import json
import os
import subprocess
import sys
import uuid

import fixtures
import glanceclient
import requests

import cyborg
from cyborg import bitstream
from cyborg.clients import glance as glance_client
from cyborg.tests import base
from cyborg.tests.fixtures import processes
from cyborg.tests.functional.aio import test_aio

START_TIMEOUT = 60
COMMAND_TIMEOUT = 60
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(cyborg.__file__)))
README = os.path.join(ROOT, 'README.rst')
# The first line of README's block of commands; the block ends at a blank line.
FIRST_LINE = '    IMAGE=$(.venv/bin/cyborg-bitstream show aes-128 '
REGION = test_aio.INTEL + '-region1'
BIN = os.path.dirname(sys.executable)


def readme_commands(api_url):
    """README's commands, for this all-in-one's API and this virtualenv."""
    with open(README, encoding='utf-8') as readme:
        text = readme.read()
    start = text.index(FIRST_LINE)
    block = text[start:text.index('\n\n', start)]
    swaps = (('.venv/bin/', BIN + '/'),
             ('http://127.0.0.1:6666', api_url),
             ('python3 ', sys.executable + ' '))
    for old, new in swaps:
        if old not in block:
            raise AssertionError('README\'s commands no longer hold %r:\n%s'
                                 % (old, block))
        block = block.replace(old, new)
    return '\n'.join(line[4:] for line in block.splitlines())


class TestProgramAllInOne(base.TestCase):

    def setUp(self):
        super().setUp()
        api_port = processes.free_port()
        glance_port = processes.free_port()
        self.api_url = 'http://127.0.0.1:%d' % api_port
        self.glance_url = 'http://127.0.0.1:%d' % glance_port
        directory = self.useFixture(fixtures.TempDir()).path
        self.aio = self.useFixture(processes.ServiceProcess('cyborg-aio', {
            'DEFAULT': {'host': 'aio-%s' % uuid.uuid4().hex[:8]},
            'api': {'port': api_port,
                    'fleet_page_port': processes.free_port()},
            'aio': {'state_dir': os.path.join(directory, 'state'),
                    'placement_port': processes.free_port(),
                    'glance_port': glance_port},
        }))
        self.region = processes.wait_until(
            self._region, 'the simulated %s in the API' % REGION, [self.aio],
            timeout=START_TIMEOUT)
        # The developer's OS_* variables must not send the commands
        # elsewhere; the all-in-one's Glance is on a port of the test's.
        self.environment = {name: value for name, value in os.environ.items()
                            if not name.startswith('OS_')}
        self.environment['OS_IMAGE_URL'] = self.glance_url
        self.images = glance_client.GlanceClient(
            None, client=glanceclient.Client('2', endpoint=self.glance_url))

    def _region(self):
        try:
            response = requests.get(
                self.api_url + '/v2/deployables', params={'name': REGION},
                timeout=5)
        except requests.ConnectionError:
            return None
        if response.status_code != 200:
            return None
        return (response.json()['deployables'] or [None])[0]

    def _deployable(self):
        response = requests.get(
            self.api_url + '/v2/deployables/%s' % self.region['uuid'],
            timeout=10)
        self.assertEqual(200, response.status_code, response.text)
        return response.json()

    def _program(self, image_id):
        return requests.patch(
            self.api_url + '/v2/deployables/%s/program' % self.region['uuid'],
            json=[{'path': '/program', 'op': 'replace',
                   'value': [{'image_uuid': image_id}]}], timeout=30)

    def _bitstream(self, *argv):
        """Run the cyborg-bitstream script; return its JSON output."""
        result = subprocess.run(
            [processes.console_script('cyborg-bitstream'), *argv,
             '-f', 'json'], capture_output=True, text=True, cwd=ROOT,
            env=self.environment, timeout=COMMAND_TIMEOUT)
        self.assertEqual(0, result.returncode, result.stderr)
        return json.loads(result.stdout)

    def _metadata(self, vendor):
        """The README's metadata but bs-uuid, with ``vendor``."""
        return {'bs-name': 'other', 'bs-uuid': str(uuid.uuid4()),
                'vendor': vendor, 'board': 'pac_arria10', 'version': '1.0',
                'driver_ver': '1.0', 'driver_path': '/opt/opae/',
                'region_uuid': self.region_id(),
                'function_uuid': str(uuid.uuid4())}

    def region_id(self):
        """The region_id attribute the fake driver reports for region1."""
        attributes = json.loads(self.region['attributes_list'])
        return [item['region_id'] for item in attributes
                if 'region_id' in item][0]

    def _assert_refused(self, image_id, status, message, bitstream_id):
        response = self._program(image_id)
        self.assertEqual(status, response.status_code, response.text)
        self.assertIn(message, response.json()['error_message'])
        self.assertEqual(bitstream_id, self._deployable()['bitstream_id'])

    def test_readme_programs_the_simulated_region(self):
        self.assertIsNone(self.region['bitstream_id'])

        result = subprocess.run(
            ['bash', '-euo', 'pipefail', '-c',
             readme_commands(self.api_url)],
            capture_output=True, text=True, cwd=ROOT, env=self.environment,
            timeout=COMMAND_TIMEOUT)

        self.assertEqual(0, result.returncode, result.stderr)
        answer = json.loads(result.stdout)
        listed = self._bitstream('list', '--function-name', 'aes',
                                 '--region-uuid', self.region_id())
        self.assertEqual([('aes-128', True)],
                         [(row['name'], row['valid']) for row in listed])
        image_id = listed[0]['id']
        self.assertEqual((self.region['uuid'], REGION, image_id),
                         (answer['uuid'], answer['name'],
                          answer['bitstream_id']))
        self.assertEqual(image_id, self._deployable()['bitstream_id'])

        # Safe to run twice: the second run finds the bitstream, uploads
        # nothing and programs the same image.
        again = subprocess.run(
            ['bash', '-euo', 'pipefail', '-c',
             readme_commands(self.api_url)],
            capture_output=True, text=True, cwd=ROOT, env=self.environment,
            timeout=COMMAND_TIMEOUT)
        self.assertEqual(0, again.returncode, again.stderr)
        self.assertEqual(image_id, json.loads(again.stdout)['bitstream_id'])
        self.assertEqual([image_id], [row['id'] for row in self._bitstream(
            'list', '--function-name', 'aes')])

        # Not a bitstream: the image lacks the FPGA tag.
        path = os.path.join(ROOT, 'etc', 'cyborg', 'fake-bitstream.gbs')
        untagged = self.images.upload(path, 'untagged',
                                      self._metadata('intel'))
        self._assert_refused(untagged['id'], 400,
                             'The image is not tagged %s' % bitstream.TAG,
                             image_id)

        # A bitstream for a Xilinx card does not fit the Intel one.
        metadata = self._metadata('xilinx')
        other = self._bitstream(
            'upload', path, '--name', 'xilinx-aes',
            *[item for key in bitstream.KEYS if key.name in metadata
              for item in ('--' + key.name.replace('_', '-'),
                           metadata[key.name])])
        self.assertEqual(['FPGA'], other['tags'])
        self._assert_refused(other['id'], 409, "Its vendor 'xilinx'",
                             image_id)
