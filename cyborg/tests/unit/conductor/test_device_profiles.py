"""device_profiles.create and delete: one transaction each, on every backend."""

from oslo_db import exception as db_exception
from oslo_utils import uuidutils

from cyborg import context as cyborg_context
from cyborg import exception
from cyborg import objects
from cyborg.conductor import device_profiles
from cyborg.db.queries import device_profiles as device_profile_queries
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.unit.db import records


def _profile(name, **values):
    return dict({'name': name, 'groups': [{'resources:FPGA': '1'}]},
                **values)


class TestDeviceProfiles(base.TestCase):

    backend = 'sqlite'

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(database.Database(
            backend=self.backend, schema='migrations'))
        self.context = cyborg_context.get_admin_context()

    def _names(self):
        return sorted(profile.name for profile in
                      objects.DeviceProfile.list(self.context))

    def test_create_several_returns_them_in_order(self):
        given_uuid = uuidutils.generate_uuid()
        created = device_profiles.create(self.context, [
            _profile('first', description='the first'),
            _profile('second', uuid=given_uuid,
                     groups=[{'resources:PGPU': '2',
                              'trait:CUSTOM_NVIDIA_1EB8': 'required'}])])

        self.assertEqual(['first', 'second'],
                         [profile.name for profile in created])
        self.assertEqual('the first', created[0].description)
        self.assertTrue(uuidutils.is_uuid_like(created[0].uuid))
        self.assertIsNotNone(created[0].created_at)
        stored = objects.DeviceProfile.get_by_uuid(self.context, given_uuid)
        self.assertEqual([{'resources:PGPU': '2',
                           'trait:CUSTOM_NVIDIA_1EB8': 'required'}],
                         stored.groups)
        self.assertIsNone(stored.description)

    def test_a_taken_name_creates_nothing(self):
        records.make_device_profile(self.context, name='taken')

        error = self.assertRaises(
            exception.DuplicateName, device_profiles.create, self.context,
            [_profile('new-1'), _profile('new-2'), _profile('taken')])

        self.assertEqual(409, error.code)
        self.assertIn('taken', error.message)
        self.assertEqual(['taken'], self._names())

    def test_a_taken_uuid_creates_nothing(self):
        existing = records.make_device_profile(self.context, name='taken')

        error = self.assertRaises(
            exception.Conflict, device_profiles.create, self.context,
            [_profile('new-1'), _profile('new-2', uuid=existing.uuid)])

        self.assertEqual(409, error.code)
        self.assertEqual(['taken'], self._names())

    def test_create_refuses_a_name_given_twice(self):
        self.assertRaises(exception.Invalid, device_profiles.create,
                          self.context, [_profile('twice'), _profile('twice')])
        self.assertEqual([], self._names())

    def test_create_refuses_malformed_profiles(self):
        for profiles in ([], None, [{'name': 'no-groups'}],
                         [_profile('x', colour='blue')], ['x']):
            self.assertRaises(exception.Invalid, device_profiles.create,
                              self.context, profiles)
        self.assertEqual([], self._names())

    def test_delete_by_uuid_and_by_name(self):
        first = records.make_device_profile(self.context, name='first')
        records.make_device_profile(self.context, name='second')
        records.make_device_profile(self.context, name='third')

        device_profiles.delete(self.context, [first.uuid, 'third'])

        self.assertEqual(['second'], self._names())

    def test_a_uuid_like_name_is_found_by_name(self):
        name = uuidutils.generate_uuid()
        records.make_device_profile(self.context, name=name)

        device_profiles.delete(self.context, [name])

        self.assertEqual([], self._names())

    def test_a_ref_given_twice_deletes_once(self):
        profile = records.make_device_profile(self.context, name='once')

        device_profiles.delete(self.context, ['once', profile.uuid, 'once'])

        self.assertEqual([], self._names())

    def test_a_missing_profile_deletes_nothing(self):
        records.make_device_profile(self.context, name='first')
        records.make_device_profile(self.context, name='second')

        error = self.assertRaises(
            exception.ResourceNotFound, device_profiles.delete, self.context,
            ['first', 'missing', 'second'])

        self.assertEqual(404, error.code)
        self.assertEqual('DeviceProfile not found with name=missing',
                         error.message)
        self.assertEqual(['first', 'second'], self._names())

    def test_a_missing_uuid_is_named_as_a_uuid(self):
        missing = uuidutils.generate_uuid()

        error = self.assertRaises(exception.ResourceNotFound,
                                  device_profiles.delete, self.context,
                                  [missing])

        self.assertEqual('DeviceProfile not found with uuid=%s' % missing,
                         error.message)

    def test_a_profile_used_by_an_arq_deletes_nothing(self):
        free = records.make_device_profile(self.context, name='free')
        used = records.make_device_profile(self.context, name='used')
        records.make_arq(self.context, used)
        records.make_arq(self.context, used)

        error = self.assertRaises(
            exception.Conflict, device_profiles.delete, self.context,
            [free.uuid, 'used'])

        self.assertEqual(409, error.code)
        self.assertIn('used is used by accelerator requests', error.message)
        self.assertEqual(['free', 'used'], self._names())

    def test_count_arqs_using(self):
        free = records.make_device_profile(self.context)
        used = records.make_device_profile(self.context)
        records.make_arq(self.context, used)
        records.make_arq(self.context, used, device_profile_group_id=1)

        self.assertEqual({used.id: 2}, device_profile_queries.count_arqs_using(
            self.context, [free.id, used.id]))

    def test_the_foreign_key_refuses_a_delete_the_check_missed(self):
        # What a delete racing with an ARQ creation meets on SQLite.
        used = records.make_device_profile(self.context, name='used')
        records.make_arq(self.context, used)

        self.assertRaises(db_exception.DBReferenceError,
                          device_profile_queries.destroy_many, self.context,
                          [used.id])
        self.assertEqual(['used'], self._names())

    def test_delete_turns_a_foreign_key_refusal_into_a_conflict(self):
        used = records.make_device_profile(self.context, name='used')
        records.make_arq(self.context, used)
        # The check runs before the ARQ appears.
        self.patch(device_profile_queries, 'count_arqs_using',
                   lambda context, ids: {})

        error = self.assertRaises(exception.Conflict, device_profiles.delete,
                                  self.context, ['used'])

        self.assertIn('used by an accelerator request', error.message)
        self.assertEqual(['used'], self._names())

    def test_delete_refuses_malformed_refs(self):
        for refs in ([], None, [''], [3], 'name'):
            self.assertRaises(exception.Invalid, device_profiles.delete,
                              self.context, refs)


class TestDeviceProfilesMySQL(TestDeviceProfiles):

    backend = 'mysql'


class TestDeviceProfilesPostgreSQL(TestDeviceProfiles):

    backend = 'postgresql'
