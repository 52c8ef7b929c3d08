"""DeviceProfile objects on SQLite: groups as JSON, unique names, lookups."""

from cyborg import context as cyborg_context
from cyborg import exception
from cyborg import objects
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.unit.db import records


class DeviceProfileTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(database.Database())
        self.context = cyborg_context.get_admin_context()

    def test_groups_are_stored_as_json_and_read_back(self):
        groups = [{'resources:FPGA': '1', 'trait:CUSTOM_FPGA_INTEL': 'required'},
                  {'resources:CUSTOM_PCI': '2'}]
        profile = records.make_device_profile(self.context, groups=groups)

        stored = objects.DeviceProfile.get_by_uuid(self.context, profile.uuid)
        with self.database.engine.connect() as connection:
            raw = connection.exec_driver_sql(
                'SELECT profile_json FROM device_profiles').scalar()

        self.assertEqual(groups, stored.groups)
        self.assertIn('"resources:CUSTOM_PCI": "2"', raw)

    def test_get_by_name(self):
        profile = records.make_device_profile(self.context, name='fpga-small')

        self.assertEqual(profile.uuid, objects.DeviceProfile.get_by_name(
            self.context, 'fpga-small').uuid)
        self.assertRaises(exception.ResourceNotFound,
                          objects.DeviceProfile.get_by_name, self.context,
                          'fpga-large')

    def test_duplicate_name_is_refused(self):
        records.make_device_profile(self.context, name='fpga-small')

        error = self.assertRaises(exception.DuplicateName,
                                  records.make_device_profile, self.context,
                                  name='fpga-small')
        self.assertEqual(409, error.code)

    def test_duplicate_uuid_is_a_conflict(self):
        profile = records.make_device_profile(self.context)

        self.assertRaises(exception.Conflict, records.make_device_profile,
                          self.context, uuid=profile.uuid)

    def test_list_by_names_and_save_groups(self):
        small = records.make_device_profile(self.context, name='small')
        records.make_device_profile(self.context, name='medium')
        large = records.make_device_profile(self.context, name='large')
        large.groups = [{'resources:FPGA': '4'}]
        large.save(self.context)

        listed = objects.DeviceProfile.list(
            self.context, filters={'name': ['small', 'large']},
            sort_key='name')

        self.assertEqual(['large', 'small'], [item.name for item in listed])
        self.assertEqual([{'resources:FPGA': '4'}], listed[0].groups)
        self.assertEqual(small.groups, listed[1].groups)
