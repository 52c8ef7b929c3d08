"""cyborg.clients.glance against a real Glance (cyborg.tests.fixtures.glance).

Bitstreams go up with their properties and tag, come back by id, property
and tag, and come down only when their bytes match the hash Glance recorded
and fit the caller's limit; a refused download leaves no file behind.
"""

import hashlib
import os
import sqlite3
import stat
import sys
import uuid

import fixtures
from oslo_config import cfg

from cyborg.aio import glance as aio_glance
from cyborg.clients import glance as glance_client
from cyborg import conf as cyborg_conf
from cyborg import exception
from cyborg.tests import base
from cyborg.tests.fixtures import glance as glance_fixture

BITSTREAM = b'\x00\x01gzip bitstream\xff' * 4096


class TestGlanceClient(base.TestCase):

    def setUp(self):
        super().setUp()
        self.glance = self.useFixture(glance_fixture.GlanceFixture())
        self.client = glance_client.GlanceClient(cyborg_conf.CONF)
        self.directory = self.useFixture(fixtures.TempDir()).path

    def _file(self, data=BITSTREAM, name='bitstream.gbs'):
        path = os.path.join(self.directory, 'uploads', name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'wb') as data_file:
            data_file.write(data)
        return path

    def _upload(self, vendor='0x8086', tags=('FPGA',), data=BITSTREAM,
                name='gzip'):
        properties = {'bs-name': name, 'bs-uuid': str(uuid.uuid4()),
                      'vendor': vendor}
        return self.client.upload(self._file(data), name, properties, tags)

    def _downloads(self):
        """The files of the download directory (temporary ones included)."""
        path = os.path.join(self.directory, 'downloads')
        os.makedirs(path, exist_ok=True)
        return sorted(os.listdir(path))

    def _destination(self):
        self._downloads()
        return os.path.join(self.directory, 'downloads', 'bitstream.gbs')

    def _forget_os_hash(self, image_id):
        """Make the image one of a Glance before multihashes (Rocky)."""
        connection = sqlite3.connect(
            aio_glance.StatePaths(self.glance.state_dir).database)
        try:
            with connection:
                connection.execute(
                    'UPDATE images SET os_hash_algo = NULL, '
                    'os_hash_value = NULL WHERE id = ?', (image_id,))
        finally:
            connection.close()

    def _tamper(self, image_id, data):
        with open(self.glance.image_path(image_id), 'wb') as stored:
            stored.write(data)

    def test_upload_then_get(self):
        image = self._upload()

        self.assertEqual('active', image['status'])
        self.assertEqual('gzip', image['name'])
        self.assertEqual('0x8086', image['vendor'])
        self.assertEqual('gzip', image['bs-name'])
        self.assertEqual(['FPGA'], image['tags'])
        self.assertEqual(('raw', 'bare'),
                         (image['disk_format'], image['container_format']))
        self.assertEqual(len(BITSTREAM), image['size'])
        self.assertEqual('sha512', image['os_hash_algo'])
        self.assertEqual(hashlib.sha512(BITSTREAM).hexdigest(),
                         image['os_hash_value'])
        self.assertEqual(image, self.client.get_image(image['id']))
        with open(self.glance.image_path(image['id']), 'rb') as stored:
            self.assertEqual(BITSTREAM, stored.read())

    def test_list_by_property_and_tag(self):
        gzip = self._upload(vendor='0x8086', tags=['FPGA'])
        xilinx = self._upload(vendor='0x10ee', tags=['FPGA'])
        untagged = self._upload(vendor='0x8086', tags=[])

        def ids(filters):
            return sorted(image['id']
                          for image in self.client.list_images(filters))

        self.assertEqual([gzip['id']],
                         ids({'vendor': '0x8086', 'tag': 'FPGA'}))
        self.assertEqual(sorted([gzip['id'], xilinx['id']]),
                         ids({'tag': ['FPGA']}))
        self.assertEqual(sorted([gzip['id'], untagged['id']]),
                         ids({'vendor': '0x8086'}))
        self.assertEqual([xilinx['id']], ids({'bs-uuid': xilinx['bs-uuid']}))
        self.assertEqual([], ids({'vendor': '0x1234'}))
        self.assertEqual(3, len(self.client.list_images()))

    def test_list_follows_every_page(self):
        self.useFixture(fixtures.MockPatch(
            'cyborg.clients.glance.PAGE_SIZE', 1))
        uploaded = sorted(self._upload()['id'] for _ in range(3))

        self.assertEqual(uploaded, sorted(
            image['id'] for image in self.client.list_images({'tag': 'FPGA'})))

    def test_download_verifies_the_hash(self):
        image = self._upload()
        destination = self._destination()

        downloaded = self.client.download(image['id'], destination,
                                          max_bytes=len(BITSTREAM))

        self.assertEqual(image['id'], downloaded['id'])
        with open(destination, 'rb') as data_file:
            self.assertEqual(BITSTREAM, data_file.read())
        self.assertEqual(0o600, stat.S_IMODE(os.stat(destination).st_mode))
        self.assertEqual(['bitstream.gbs'], self._downloads())

    def test_tampered_data_is_refused_and_removed(self):
        image = self._upload()
        # Same size, other bytes: only the hash can tell.
        self._tamper(image['id'], BITSTREAM[::-1])

        error = self.assertRaises(
            exception.ImageDataInvalid, self.client.download, image['id'],
            self._destination(), max_bytes=len(BITSTREAM))

        self.assertIn('sha512', str(error))
        self.assertEqual([], self._downloads())

    def test_md5_checksum_when_glance_has_no_os_hash(self):
        image = self._upload()
        self._forget_os_hash(image['id'])
        destination = self._destination()

        self.client.download(image['id'], destination, len(BITSTREAM))
        with open(destination, 'rb') as data_file:
            self.assertEqual(BITSTREAM, data_file.read())

        os.unlink(destination)
        self._tamper(image['id'], BITSTREAM[::-1])
        error = self.assertRaises(
            exception.ImageDataInvalid, self.client.download, image['id'],
            destination, len(BITSTREAM))
        self.assertIn('md5', str(error))
        self.assertEqual([], self._downloads())

    def test_image_larger_than_the_limit_is_refused(self):
        image = self._upload()

        self.assertRaises(exception.ImageTooLarge, self.client.download,
                          image['id'], self._destination(),
                          max_bytes=len(BITSTREAM) - 1)
        self.assertEqual([], self._downloads())

    def test_limit_holds_while_the_data_streams(self):
        image = self._upload()
        # An image whose size is not shown (Glance answers 500 for a row
        # without one, so the client is the one not seeing it): the limit
        # holds on the bytes themselves.
        get_image = self.client.get_image
        self.useFixture(fixtures.MockPatchObject(
            self.client, 'get_image',
            side_effect=lambda image_id: dict(get_image(image_id),
                                              size=None)))

        self.assertRaises(exception.ImageTooLarge, self.client.download,
                          image['id'], self._destination(),
                          max_bytes=len(BITSTREAM) // 2)
        self.assertEqual([], self._downloads())

    def test_unknown_image(self):
        unknown = str(uuid.uuid4())

        error = self.assertRaises(exception.ImageNotFound,
                                  self.client.get_image, unknown)
        self.assertIsInstance(error, exception.NotFound)
        self.assertRaises(exception.ImageNotFound, self.client.download,
                          unknown, self._destination(), 1024)
        self.assertEqual([], self._downloads())

    def test_delete_image(self):
        image = self._upload()
        kept = self._upload(name='other')

        self.client.delete_image(image['id'])

        self.assertEqual([kept['id']], [found['id'] for found in
                                        self.client.list_images()])
        self.assertEqual([kept['id']], os.listdir(self.glance.images_dir))
        self.assertRaises(exception.ImageNotFound, self.client.delete_image,
                          image['id'])

    def test_failed_upload_deletes_the_image(self):
        # Glance refuses data over its image_size_cap (413), after the
        # image was created.
        glance_config = aio_glance.glance_config()
        glance_config.set_override('image_size_cap', len(BITSTREAM) - 1)
        self.addCleanup(glance_config.clear_override, 'image_size_cap')

        error = self.assertRaises(exception.GlanceError, self._upload)

        self.assertEqual(413, error.kwargs['status'])
        self.assertEqual([], self.client.list_images())
        self.assertEqual([], os.listdir(self.glance.images_dir))

    def test_unreachable_glance(self):
        self.flags(group='glance', endpoint_override='http://127.0.0.1:9')
        client = glance_client.GlanceClient(cyborg_conf.CONF)

        self.assertRaises(exception.GlanceUnavailable, client.list_images)

    def test_glance_keeps_its_own_configuration(self):
        glance_config = aio_glance.glance_config()

        self.assertIs(cyborg_conf.CONF, cfg.CONF)
        self.assertIsNot(glance_config, cfg.CONF)
        self.assertEqual(
            aio_glance.StatePaths(self.glance.state_dir).database_url,
            glance_config.database.connection)
        self.assertNotEqual(glance_config.database.connection,
                            cyborg_conf.CONF.database.connection)

    def test_nothing_is_monkey_patched(self):
        # Glance's modules import eventlet; cyborg runs on native threads.
        self._upload()
        patcher = sys.modules.get('eventlet.patcher')
        if patcher is not None:
            self.assertEqual([], [name for name in (
                'os', 'select', 'socket', 'thread', 'time')
                if patcher.is_monkey_patched(name)])
