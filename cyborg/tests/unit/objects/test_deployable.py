"""Deployable objects on SQLite: attributes_list, lookups and the device tree."""

import json

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

        # attributes_list is the API's JSON text, aggregated by the database.
        self.assertEqual([(first.uuid, '[{"rc": "FPGA"}]'),
                          (second.uuid, '[{"rc": "PGPU"}]')],
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

    def test_rows_of_a_tree_name_their_parent_and_root(self):
        root = records.make_deployable(self.context, self.device)
        region = records.make_deployable(self.context, self.device,
                                         parent_id=root.id, root_id=root.id)
        vf = records.make_deployable(self.context, self.device,
                                     parent_id=region.id, root_id=root.id)

        rows = {row.uuid: row for row, _ in objects.Deployable.list_rows(
            self.context, tree_uuids=True)}
        plain, _ = objects.Deployable.list_rows(self.context)[0]

        self.assertEqual((None, None), (rows[root.uuid].parent_uuid,
                                        rows[root.uuid].root_uuid))
        self.assertEqual((root.uuid, root.uuid),
                         (rows[region.uuid].parent_uuid,
                          rows[region.uuid].root_uuid))
        self.assertEqual((region.uuid, root.uuid),
                         (rows[vf.uuid].parent_uuid, rows[vf.uuid].root_uuid))
        self.assertFalse(hasattr(plain, 'parent_uuid'))

    def test_programmed_keeps_deployables_with_or_without_a_bitstream(self):
        loaded = records.make_deployable(
            self.context, self.device,
            bitstream_id='c1ba3b77-bd0c-4d67-a1c7-0d3a4e1f6d8e')
        empty = records.make_deployable(self.context, self.device)

        def names(programmed):
            return [row.uuid for row, _ in objects.Deployable.list_rows(
                self.context, programmed=programmed)]

        self.assertEqual([loaded.uuid], names(True))
        self.assertEqual([empty.uuid], names(False))
        self.assertEqual([loaded.uuid, empty.uuid], names(None))

    def test_nested_attributes_come_under_their_parent(self):
        deployable = records.make_deployable(self.context, self.device)
        records.make_attribute(self.context, deployable, 'rc', 'FPGA')
        board = records.make_attribute(self.context, deployable, 'board',
                                       None)
        records.make_attribute(self.context, deployable, 'shell', 'pac',
                               parent_attribute_id=board.id)
        records.make_attribute(self.context, deployable, 'empty', None)

        _, nested = objects.Deployable.get_row(
            self.context, deployable.uuid, nested_attributes=True)
        _, flat = objects.Deployable.get_row(self.context, deployable.uuid)

        self.assertEqual('[{"rc": "FPGA"}, {"board": {"shell": "pac"}}, '
                         '{"empty": null}]', nested)
        self.assertEqual('[{"rc": "FPGA"}, {"board": null}, '
                         '{"shell": "pac"}, {"empty": null}]', flat)
        self.assertEqual(
            json.loads(flat), objects.Deployable.get_by_uuid(
                self.context, deployable.uuid).attributes_list)

    def test_get_row_of_an_unknown_deployable_is_not_found(self):
        error = self.assertRaises(
            exception.ResourceNotFound, objects.Deployable.get_row,
            self.context, '8a4e2a3e-4c2b-4a62-9f3c-1c0b8c2d9e01')
        self.assertEqual('Deployable not found with '
                         'uuid=8a4e2a3e-4c2b-4a62-9f3c-1c0b8c2d9e01',
                         str(error))
