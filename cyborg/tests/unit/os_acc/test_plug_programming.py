"""plug programs the bitstream a flavor names, before it attaches the handle.

The compute node of ``compute_node`` with a real Glance
(``cyborg.tests.fixtures.glance``): the conductor's binder resolves
``accel:bitstream_id`` or ``accel:function_id`` there (the programming
path of binds, ``cyborg.conductor.bind_programming``), the agent downloads
the image and the fake driver programs the region.
"""

import os
import uuid

import fixtures
import sqlalchemy as sa

from cyborg import conf
from cyborg.clients import glance as glance_client
from cyborg.tests.fixtures import glance as glance_fixture
from cyborg.tests.unit.os_acc import compute_node
import os_acc

REGION_ID = '9346116d97f4432b4fa2a3a4b6a1d2ab'
# Card 0: an Intel PAC whose region takes its bitstreams; card 1: its
# programming fails.
FLEET = """
fpgas:
  - {vendor: "0x8086", vendor_name: intel, board: pac_arria10,
     regions: [{id: "%(region)s", vfs_per_pf: 2}]}
  - {vendor: "0x8086", vendor_name: intel, board: pac_arria10,
     regions: [{id: "%(region)s", vfs_per_pf: 2,
                program: {result: failed}}]}
""" % {'region': REGION_ID}


class PlugProgrammingTests(compute_node.ComputeNodeTestsBase):

    inventory = FLEET

    def setUp(self):
        self.useFixture(glance_fixture.GlanceFixture())
        super().setUp()
        downloads = self.useFixture(fixtures.TempDir()).path
        self.useFixture(fixtures.MonkeyPatch('tempfile.tempdir', downloads))
        self.files = self.useFixture(fixtures.TempDir()).path

    def upload(self, function=None):
        """A bitstream image for the PAC's region in Glance; its id."""
        path = os.path.join(self.files, uuid.uuid4().hex)
        with open(path, 'wb') as data:
            data.write(b'\x01bitstream')
        properties = {'bs-name': 'aes', 'bs-uuid': str(uuid.uuid4()),
                      'vendor': 'intel', 'board': 'pac_arria10',
                      'version': '1', 'driver_ver': '1',
                      'driver_path': '/opt',
                      'function_uuid': function or str(uuid.uuid4())}
        return glance_client.GlanceClient(conf.CONF).upload(
            path, 'aes', properties, ['FPGA'])['id']

    def region(self, card):
        return self.query(sa.select(compute_node.Deployable).where(
            compute_node.Deployable.c.rp_uuid == self.providers[card]))[0]

    def plug(self, card, extra_specs):
        instance = {'uuid': str(uuid.uuid4()), 'name': 'vm'}
        return instance, os_acc.plug(instance, {'uuid': self.providers[card]},
                                     extra_specs)

    def test_the_bitstream_is_programmed_then_the_handle_attached(self):
        image = self.upload()
        _, plugged = self.plug(0, {'resources:FPGA': '1',
                                   'accel:bitstream_id': image})

        self.assertEqual([{'pci_id': '0000:10:01.0'}], plugged)
        region = self.region(0)
        self.assertEqual([(region.name, image)], self.driver.programs)
        self.assertEqual(image, region.bitstream_id)

    def test_the_image_of_the_function_is_programmed(self):
        function = str(uuid.uuid4())
        image = self.upload(function=function)
        _, plugged = self.plug(0, {'resources:FPGA': '1',
                                   'accel:function_id': function})

        self.assertEqual(1, len(plugged))
        self.assertEqual([(self.region(0).name, image)], self.driver.programs)

    def test_a_failed_programming_fails_the_plug_and_holds_nothing(self):
        image = self.upload()
        instance = {'uuid': str(uuid.uuid4()), 'name': 'vm'}

        error = self.assertRaises(
            os_acc.PlugFailed, os_acc.plug, instance,
            {'uuid': self.providers[1]},
            {'resources:FPGA': '1', 'accel:bitstream_id': image})

        self.assertIn('FAILED', str(error))
        self.assertEqual([], self.arq_rows())
        self.assertEqual([], self.handles_in_use())
