"""The all-in-one's Glance: its defaults, the embedded server, and
``cyborg-aio`` serving it to cyborg's own Glance client.
"""

import hashlib
import http.client
import json
import os
import uuid

import fixtures
from oslo_config import cfg
import requests

from cyborg.aio import conf as aio_conf
from cyborg.aio import glance as aio_glance
from cyborg.clients import glance as glance_client
from cyborg import conf as cyborg_conf
from cyborg.tests import base
from cyborg.tests.fixtures import glance as glance_fixture
from cyborg.tests.fixtures import processes

START_TIMEOUT = 60
BITSTREAM = b'all-in-one bitstream\n' * 1000


def aio_configuration(config_path, directory):
    """The configuration cyborg-aio makes of ``config_path``."""
    conf = cfg.ConfigOpts()
    for module in cyborg_conf.MODULES:
        module.register_opts(conf)
    aio_conf.set_defaults(conf, environ={}, cwd=directory)
    conf(['--config-file', config_path], project='cyborg',
         default_config_files=[], default_config_dirs=[])
    return conf


class TestGlanceDefaults(base.TestCase):

    def test_defaults(self):
        directory = self.useFixture(fixtures.TempDir()).path
        config_path = os.path.join(directory, 'aio.conf')
        processes.write_config(config_path, {'aio': {'glance_port': 19292}})

        conf = aio_configuration(config_path, directory)

        self.assertTrue(conf.aio.embedded_glance)
        self.assertEqual('127.0.0.1', conf.aio.glance_host)
        self.assertEqual('none', conf.glance.auth_type)
        self.assertEqual('http://127.0.0.1:19292',
                         conf.glance.endpoint_override)
        self.assertIn('glance=WARN', conf.default_log_levels)

    def test_default_port(self):
        directory = self.useFixture(fixtures.TempDir()).path
        config_path = os.path.join(directory, 'aio.conf')
        processes.write_config(config_path, {})

        conf = aio_configuration(config_path, directory)

        self.assertEqual(9292, conf.aio.glance_port)
        self.assertEqual('http://127.0.0.1:9292',
                         conf.glance.endpoint_override)


class TestEmbeddedGlance(base.TestCase):
    """The server of cyborg.aio.glance, in this process."""

    def _upload(self, endpoint, connection=None):
        response = requests.post(endpoint + '/v2/images', json={
            'name': 'bitstream', 'disk_format': 'raw',
            'container_format': 'bare'}, timeout=10)
        self.assertEqual(201, response.status_code, response.text)
        image_id = response.json()['id']
        # In chunks, as glanceclient sends a file.
        connection.request('PUT', '/v2/images/%s/file' % image_id,
                           body=iter([BITSTREAM[:100], BITSTREAM[100:]]),
                           encode_chunked=True, headers={
                               'Content-Type': 'application/octet-stream'})
        response = connection.getresponse()
        response.read()
        self.assertEqual(204, response.status)
        return image_id

    def test_a_connection_outlives_an_upload(self):
        # Glance closes the body it reads an upload from; the connection
        # stays usable for the next request all the same.
        glance = self.useFixture(glance_fixture.GlanceFixture())
        connection = http.client.HTTPConnection(
            '127.0.0.1', int(glance.endpoint.rsplit(':', 1)[1]), timeout=10)
        self.addCleanup(connection.close)

        image_id = self._upload(glance.endpoint, connection)
        connection.request('GET', '/v2/images/%s' % image_id)
        response = connection.getresponse()

        self.assertEqual(200, response.status)
        self.assertEqual('active',
                         json.loads(response.read())['status'])

    def test_state_survives_a_restart(self):
        state_dir = self.useFixture(fixtures.TempDir()).path
        glance = aio_glance.EmbeddedGlance(state_dir, port=0, threads=2)
        endpoint = glance.start()
        try:
            connection = http.client.HTTPConnection(
                '127.0.0.1', glance.port, timeout=10)
            image_id = self._upload(endpoint, connection)
            connection.close()
        finally:
            glance.stop()

        glance = aio_glance.EmbeddedGlance(state_dir, port=0, threads=2)
        endpoint = glance.start()
        try:
            response = requests.get(endpoint + '/v2/images/%s/file'
                                    % image_id, timeout=10)
        finally:
            glance.stop()
        self.assertEqual(200, response.status_code)
        self.assertEqual(BITSTREAM, response.content)

    def test_one_glance_per_process(self):
        self.useFixture(glance_fixture.GlanceFixture())
        state_dir = self.useFixture(fixtures.TempDir()).path
        second = aio_glance.EmbeddedGlance(state_dir, port=0)

        self.assertRaises(RuntimeError, second.start)
        # The refused one released nothing of the running one's.
        self.assertRaises(RuntimeError, second.start)


class TestAllInOneServesGlance(base.TestCase):
    """cyborg-aio as a process: Glance on its port, for cyborg's client."""

    def setUp(self):
        super().setUp()
        self.directory = self.useFixture(fixtures.TempDir()).path
        self.state_dir = os.path.join(self.directory, 'state')
        self.glance_port = processes.free_port()
        options = {
            'DEFAULT': {'host': 'aio-%s' % uuid.uuid4().hex[:8]},
            'api': {'port': processes.free_port(),
                    'fleet_page_port': processes.free_port()},
            'aio': {'state_dir': self.state_dir,
                    'placement_port': processes.free_port(),
                    'glance_port': self.glance_port},
        }
        self.config_path = os.path.join(self.directory, 'aio.conf')
        processes.write_config(self.config_path, options)
        self.aio = self.useFixture(processes.ServiceProcess('cyborg-aio',
                                                            options))

    def _versions(self):
        try:
            response = requests.get(
                'http://127.0.0.1:%d/versions' % self.glance_port, timeout=5)
        except requests.ConnectionError:
            return None
        return response if response.status_code == 200 else None

    def test_glance_answers_the_cyborg_client(self):
        versions = processes.wait_until(self._versions, 'Glance\'s versions',
                                        [self.aio], timeout=START_TIMEOUT)
        self.assertIn('CURRENT', [version['status'] for version in
                                  versions.json()['versions']])

        conf = aio_configuration(self.config_path, self.directory)
        client = glance_client.GlanceClient(conf)
        source = os.path.join(self.directory, 'bitstream.gbs')
        with open(source, 'wb') as source_file:
            source_file.write(BITSTREAM)
        image = client.upload(source, 'gzip', {'vendor': '0x8086'}, ['FPGA'])
        self.assertEqual(hashlib.sha512(BITSTREAM).hexdigest(),
                         image['os_hash_value'])
        self.assertEqual([image['id']], [found['id'] for found in
                                         client.list_images({'tag': 'FPGA'})])
        destination = os.path.join(self.directory, 'back.gbs')
        client.download(image['id'], destination, len(BITSTREAM))
        with open(destination, 'rb') as data_file:
            self.assertEqual(BITSTREAM, data_file.read())

        # Glance's state is in the all-in-one's state dir.
        self.assertTrue(os.path.isfile(os.path.join(
            self.state_dir, 'glance', 'images', image['id'])))
        self.assertTrue(os.path.isfile(os.path.join(
            self.state_dir, 'glance', 'glance.sqlite')))
        exit_code, _ = self.aio.stop()
        self.assertEqual(0, exit_code)
        log = self.aio.log()
        self.assertIn('glance on 127.0.0.1:%d stopped' % self.glance_port,
                      log)
        # Glance's start-up noise stays out of the log.
        for noise in ('os_brick', 'schema-image.json', 'Traceback'):
            self.assertNotIn(noise, log)
