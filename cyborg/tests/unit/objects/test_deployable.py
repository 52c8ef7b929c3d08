"""Deployable objects on SQLite: attributes_list, lookups and the device tree."""

from cyborg import context as cyborg_context
from cyborg import exception
from cyborg import objects
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.unit.db import records


class DeployableTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(database.Database())
        self.context = cyborg_context.get_admin_context()
        self.device = records.make_device(self.context)

    def test_create_starts_with_no_attributes(self):
        deployable = records.make_deployable(self.context, self.device)

        self.assertEqual([], deployable.attributes_list)
        self.assertEqual(self.device.id, deployable.device_id)
        self.assertEqual(4, deployable.num_accelerators)

    def test_attributes_list_holds_key_value_pairs_in_creation_order(self):
        deployable = records.make_deployable(self.context, self.device)
        records.make_attribute(self.context, deployable, 'rc', 'FPGA')
        records.make_attribute(self.context, deployable, 'trait0',
                               'CUSTOM_FAKE_DEVICE')
        other = records.make_deployable(self.context, self.device)
        records.make_attribute(self.context, other, 'rc', 'PGPU')

        loaded = objects.Deployable.get_by_uuid(self.context, deployable.uuid)
        listed = objects.Deployable.list(self.context)

        expected = [{'rc': 'FPGA'}, {'trait0': 'CUSTOM_FAKE_DEVICE'}]
        self.assertEqual(expected, loaded.attributes_list)
        self.assertEqual([expected, [{'rc': 'PGPU'}]],
                         [item.attributes_list for item in listed])

    def test_get_by_id(self):
        deployable = records.make_deployable(self.context, self.device)

        self.assertEqual(deployable.uuid, objects.Deployable.get_by_id(
            self.context, deployable.id).uuid)
        self.assertRaises(exception.ResourceNotFound,
                          objects.Deployable.get_by_id, self.context, 999)

    def test_list_filters_by_rp_uuid_and_device(self):
        deployable = records.make_deployable(self.context, self.device)
        records.make_deployable(self.context, records.make_device(self.context))

        by_rp = objects.Deployable.list(
            self.context, filters={'rp_uuid': deployable.rp_uuid})
        by_device = objects.Deployable.list(
            self.context, filters={'device_id': self.device.id})

        self.assertEqual([deployable.uuid], [item.uuid for item in by_rp])
        self.assertEqual([deployable.uuid], [item.uuid for item in by_device])

    def test_list_rows_pairs_rows_with_their_attributes(self):
        first = records.make_deployable(self.context, self.device)
        records.make_attribute(self.context, first, 'rc', 'FPGA')
        other_device = records.make_device(self.context, hostname='other')
        second = records.make_deployable(self.context, other_device)
        records.make_attribute(self.context, second, 'rc', 'PGPU')

        everything = objects.Deployable.list_rows(self.context)
        by_host = objects.Deployable.list_rows(
            self.context, filters={'hostname': 'other'})
        by_attribute = objects.Deployable.list_rows(
            self.context, attributes=[('rc', 'FPGA')])

        self.assertEqual([(first.uuid, [{'rc': 'FPGA'}]),
                          (second.uuid, [{'rc': 'PGPU'}])],
                         [(row.uuid, attributes)
                          for row, attributes in everything])
        self.assertEqual([second.uuid], [row.uuid for row, _ in by_host])
        self.assertEqual([first.uuid], [row.uuid for row, _ in by_attribute])

    def test_save_keeps_attributes_list(self):
        deployable = records.make_deployable(self.context, self.device)
        records.make_attribute(self.context, deployable, 'rc', 'FPGA')
        deployable = objects.Deployable.get_by_uuid(self.context,
                                                    deployable.uuid)
        deployable.bitstream_id = 'c1ba3b77-bd0c-4d67-a1c7-0d3a4e1f6d8e'

        deployable.save(self.context)

        self.assertEqual([{'rc': 'FPGA'}], deployable.attributes_list)
        self.assertEqual('c1ba3b77-bd0c-4d67-a1c7-0d3a4e1f6d8e',
                         objects.Deployable.get_by_uuid(
                             self.context, deployable.uuid).bitstream_id)

    def test_destroying_a_parent_removes_its_children(self):
        root = records.make_deployable(self.context, self.device)
        child = records.make_deployable(self.context, self.device,
                                        parent_id=root.id, root_id=root.id)
        records.make_attribute(self.context, child)

        root.destroy(self.context)

        self.assertEqual([], objects.Deployable.list(self.context))
        self.assertEqual([], objects.Attribute.list(self.context))
        self.assertRaises(exception.ResourceNotFound,
                          objects.Deployable.get_by_uuid, self.context,
                          child.uuid)
