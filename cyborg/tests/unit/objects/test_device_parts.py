"""Attribute, ControlpathID and AttachHandle objects on SQLite."""

from oslo_db import exception as db_exception

from cyborg import context as cyborg_context
from cyborg import exception
from cyborg import objects
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.unit.db import records


class DevicePartsTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(database.Database())
        self.context = cyborg_context.get_admin_context()
        self.tree = records.DeviceTree(self.context, handles=3)

    def test_attribute_round_trip_and_filters(self):
        trait = records.make_attribute(self.context, self.tree.deployable,
                                       'trait0', 'CUSTOM_FAKE_DEVICE')
        trait.value = 'CUSTOM_OTHER'
        trait.save(self.context)

        by_key = objects.Attribute.list(
            self.context, filters={'deployable_id': self.tree.deployable.id,
                                   'key': 'trait0'})

        self.assertEqual([trait.uuid], [item.uuid for item in by_key])
        self.assertEqual('CUSTOM_OTHER', by_key[0].value)
        trait.destroy(self.context)
        self.assertRaises(exception.ResourceNotFound,
                          objects.Attribute.get_by_uuid, self.context,
                          trait.uuid)

    def test_controlpath_id_is_unique_per_device_type_and_info(self):
        existing = self.tree.controlpath_id

        self.assertRaises(
            db_exception.DBDuplicateEntry, records.make_controlpath_id,
            self.context, self.tree.device, cpid_info=existing.cpid_info)
        self.assertEqual(existing.cpid_info, objects.ControlpathID.get_by_uuid(
            self.context, existing.uuid).cpid_info)

    def test_attach_handles_filter_on_use(self):
        first, second, third = self.tree.attach_handles
        second.in_use = True
        second.save(self.context)

        free = objects.AttachHandle.list(
            self.context, filters={'deployable_id': self.tree.deployable.id,
                                   'in_use': False})
        one_free = objects.AttachHandle.list(
            self.context, filters={'in_use': False}, limit=1)

        self.assertEqual([first.uuid, third.uuid], [item.uuid for item in free])
        self.assertEqual([first.uuid], [item.uuid for item in one_free])
        self.assertEqual('TEST_PCI', free[0].attach_type)

    def test_attach_handle_type_is_checked(self):
        self.assertRaises(ValueError, objects.AttachHandle, attach_type='USB')
