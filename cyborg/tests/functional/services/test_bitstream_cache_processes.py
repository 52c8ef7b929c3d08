"""The agent's bitstream cache and prefetch, end to end, with a real Glance.

cyborg-conductor, -api and -agent run as separate processes over RabbitMQ,
MariaDB and a real Placement (``deployment``); Glance runs in the test
process (``cyborg.tests.fixtures.glance``) behind a WSGI middleware that
counts the GETs of each image's file: Glance itself is not mocked, the
test only counts what it serves. Binds go through os-acc (the test
process is the compute driver, as in ``test_os_acc_programming``); the
agent's cache is ``<state_path>/bitstream-cache``.
"""

import collections
import hashlib
import os
import re
import sqlite3
import threading
import time
import uuid

import fixtures

from cyborg import conf
from cyborg.aio import glance as aio_glance
from cyborg.agent import bitstream_cache
from cyborg.clients import glance as glance_client
from cyborg.tests import base
from cyborg.tests.fixtures import glance as glance_fixture
from cyborg.tests.fixtures import processes
from cyborg.tests.functional.services import deployment
from cyborg.tests.functional.services import test_os_acc_processes as os_acc_scenario
import os_acc

WAIT_TIMEOUT = deployment.WAIT_TIMEOUT
REGION_ID = '7c2e4a6b8d0f41e3a5c7e9f1b3d5f7a9'
# Two Intel PACs of one type: an image for that region type fits both.
FLEET = {'fpgas': [
    {'vendor': '0x8086', 'vendor_name': 'intel', 'board': 'pac_arria10',
     'model': 'PAC Arria 10 GX', 'product_id': '0x09c4',
     'attach_type': 'PCI',
     'regions': [{'id': REGION_ID, 'pfs': 1, 'vfs_per_pf': 1,
                  'program': {'seconds': 0.1, 'result': 'success'}}]}
    for _card in range(2)]}
REGIONS = ('fpga-0000:10:00.0-region0', 'fpga-0000:11:00.0-region0')
# Another host's card, which no image of these tests fits.
XILINX_FLEET = {'fpgas': [
    {'vendor': '0x10ee', 'vendor_name': 'xilinx', 'board': 'u250',
     'regions': [{'program': {'result': 'success'}}]}]}
_FILE = re.compile(r'^/v2/images/([^/]+)/file$')


class CountingGlance:
    """WSGI middleware in front of Glance: how many times each image's
    file was asked for (GET /v2/images/{id}/file)."""

    def __init__(self, app):
        self.app = app
        self.files = collections.Counter()
        self._lock = threading.Lock()

    def __call__(self, environ, start_response):
        found = _FILE.match(environ.get('PATH_INFO', ''))
        if found and environ.get('REQUEST_METHOD') == 'GET':
            with self._lock:
                self.files[found.group(1)] += 1
        return self.app(environ, start_response)


class BitstreamCacheProcessesTest(os_acc_scenario.OsAccProcessesMixin,
                                  base.TestCase):

    backend = 'mysql'

    def setUp(self):
        super().setUp()
        counting = []

        def load_app(config, _load=aio_glance.load_app):
            counting.append(CountingGlance(_load(config)))
            return counting[-1]

        self.useFixture(fixtures.MonkeyPatch(
            'cyborg.aio.glance.load_app', load_app))
        self.glance = self.useFixture(glance_fixture.GlanceFixture())
        self.served = counting[0].files
        glance_options = {'glance': {'auth_type': 'none',
                                     'endpoint_override': self.glance.endpoint}}
        conductor = dict(glance_options)
        conductor['conductor'] = {'bind_sweep_interval': 1,
                                  'bind_timeout': 30, 'program_timeout': 20}
        deployment.DeploymentMixin._start_services(
            self, FLEET, conductor_options=conductor,
            agent_options=glance_options)
        self.deployables = self._wait_until(
            self._regions, 'both regions in the API with providers')
        self.images = glance_client.GlanceClient(conf.CONF)
        self.cache_dir = bitstream_cache.cache_directory(self.state_path)

    def _regions(self):
        """{name: deployable} once both regions have a provider."""
        if not self._reports_done():
            return None
        status, body = self._api('GET', '/v2/deployables')
        if status != 200:
            return None
        found = {item['name']: item for item in body['deployables']}
        if any(found.get(name, {}).get('rp_uuid') is None
               for name in REGIONS):
            return None
        return found

    def _upload(self, vendor='0x8086', board='pac_arria10'):
        properties = {
            'bs-name': 'aes', 'bs-uuid': str(uuid.uuid4()),
            'vendor': vendor, 'board': board, 'version': '1',
            'driver_ver': '1.0', 'driver_path': '/opt/intel/opae',
            'region_uuid': REGION_ID, 'function_uuid': str(uuid.uuid4()),
            'function_name': 'aes'}
        path = os.path.join(self.state_path, '%s.gbs' % uuid.uuid4().hex)
        with open(path, 'wb') as data:
            data.write(os.urandom(64 * 1024))
        return self.images.upload(path, 'aes', properties, ['FPGA'])['id']

    def _replace_data(self, image_id):
        """Give the image other data and the hash Glance records for it,
        as a new upload of the same image would."""
        data = os.urandom(64 * 1024)
        with open(self.glance.image_path(image_id), 'wb') as image_file:
            image_file.write(data)
        database = aio_glance.StatePaths(self.glance.state_dir).database
        with sqlite3.connect(database) as connection:
            connection.execute(
                'UPDATE images SET checksum = ?, os_hash_value = ?, '
                'size = ? WHERE id = ?',
                (hashlib.md5(data, usedforsecurity=False).hexdigest(),
                 hashlib.sha512(data).hexdigest(), len(data), image_id))
        connection.close()
        return hashlib.sha512(data).hexdigest()

    def _cached(self, image_id, directory=None):
        """The names of the cache's files of ``image_id``."""
        directory = directory or self.cache_dir
        if not os.path.isdir(directory):
            return []
        return sorted(name for name in os.listdir(directory)
                      if name.startswith(image_id + '.'))

    def _plug(self, name, region, image_id):
        instance = os_acc_scenario.new_instance(name)
        started = time.monotonic()
        plugged = os_acc.plug(
            instance, {'uuid': self.deployables[region]['rp_uuid']},
            {'resources:FPGA': '1', 'accel:bitstream_id': image_id})
        self.assertEqual(1, len(plugged), plugged)
        return instance, time.monotonic() - started

    def _program(self, region, image_id):
        status, answer = self._api(
            'PATCH', '/v2/deployables/%s/program'
            % self.deployables[region]['uuid'],
            [{'path': '/program', 'op': 'replace',
              'value': [{'image_uuid': image_id}]}])
        self.assertEqual(200, status, '%s\n%s' % (answer, self._logs()))
        self.assertEqual(image_id, answer['bitstream_id'])

    def test_a_bitstream_is_downloaded_once_per_host_and_hash(self):
        self._configure_compute_node()
        self.assertIsNone(os_acc.initialize(timeout=WAIT_TIMEOUT))
        image_id = self._upload()

        # Bound on one region, then on the other: Glance serves it once.
        first, _seconds = self._plug('first', REGIONS[0], image_id)
        self.assertEqual(1, self.served[image_id])
        second, _seconds = self._plug('second', REGIONS[1], image_id)
        self.assertEqual(1, self.served[image_id], self.agent.log())
        self.assertIn('Image %s found in the bitstream cache' % image_id,
                      self.agent.log())
        self.assertEqual(1, len(self._cached(image_id)))
        for instance in (first, second):
            self.assertEqual(1, os_acc.unplug(instance))

        # A program call uses the cache too.
        self._program(REGIONS[0], image_id)
        self.assertEqual(1, self.served[image_id])

        # The image changed (another hash): downloaded again, and only the
        # new data stays cached.
        new_hash = self._replace_data(image_id)
        self._program(REGIONS[0], image_id)
        self.assertEqual(2, self.served[image_id])
        cached = self._cached(image_id)
        self.assertEqual(['%s.sha512.%s' % (image_id, new_hash)], cached)

        # A corrupted cached file is found out and downloaded again.
        path = os.path.join(self.cache_dir, cached[0])
        with open(path, 'r+b') as cached_file:
            cached_file.write(b'corrupted')
        self._program(REGIONS[1], image_id)
        self.assertEqual(3, self.served[image_id])
        self.assertIn('no longer has its sha512 hash', self.agent.log())
        with open(path, 'rb') as cached_file:
            self.assertEqual(new_hash,
                             hashlib.sha512(cached_file.read()).hexdigest())
        self.assertNotIn('Traceback', self.agent.log())

    def test_prefetch_fills_the_cache_of_the_fitting_host_only(self):
        other_state = self.useFixture(fixtures.TempDir()).path
        other_host = 'xilinx-%s' % self.suffix
        self._start_other_agent(other_host, other_state)
        self._wait_until(lambda: self._device_count() == 3,
                         'the other host\'s card in the API')
        image_id = self._upload()

        status, answer = deployment.api_request(
            self.api_port, 'POST', '/v2/bitstreams/%s/prefetch' % image_id,
            headers={'OpenStack-API-Version': 'accelerator 2.6'})

        self.assertEqual(202, status, answer)
        self.assertEqual({'image_id': image_id, 'hosts': [self.host]},
                         answer)
        self._wait_until(lambda: self._cached(image_id),
                         'image %s in the cache' % image_id)
        self.assertEqual(1, self.served[image_id])
        other_cache = bitstream_cache.cache_directory(other_state)
        self.assertEqual([], self._cached(image_id, other_cache))
        # The first bind after the prefetch downloads nothing.
        self._configure_compute_node()
        self.assertIsNone(os_acc.initialize(timeout=WAIT_TIMEOUT))
        self._plug('first', REGIONS[0], image_id)
        self.assertEqual(1, self.served[image_id])

    def _start_other_agent(self, host, state_path):
        """The agent of another compute node with a state directory of its
        own (its own cache)."""
        fleet_path = os.path.join(state_path, 'fleet.yaml')
        deployment.write_fleet(fleet_path, XILINX_FLEET)
        config = {group: dict(options)
                  for group, options in self.agent_config.items()}
        config['DEFAULT'].update(host=host, state_path=state_path)
        config['agent']['fake_inventory'] = fleet_path
        agent = self.useFixture(processes.ServiceProcess('cyborg-agent',
                                                         config))
        self.services.append(agent)

    def _device_count(self):
        status, body = self._api('GET', '/v2/devices')
        return len(body['devices']) if status == 200 else None
