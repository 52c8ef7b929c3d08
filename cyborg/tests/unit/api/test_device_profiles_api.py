"""/v2/device_profiles through the real WSGI application, on every backend.

Lists cost the same number of SQL statements for 2 profiles as for 100
(the ``name`` filter included), and a profile an ARQ uses is not deleted
(409, nothing deleted) — ARQs are made here directly in the database
because the gabbi files have no way to make one yet.
"""

import webob
from oslo_serialization import jsonutils

from cyborg import context as cyborg_context
from cyborg import objects
from cyborg.tests.unit.api import real_app
from cyborg.tests.unit.api import test_query_counts
from cyborg.tests.unit.db import records

SMALL = test_query_counts.SMALL
LARGE = test_query_counts.LARGE


class TestDeviceProfilesAPI(real_app.RealAppTestCase):

    conductor_server = 'device-profiles-test'

    def setUp(self):
        super().setUp()
        self.context = cyborg_context.get_admin_context()
        self.added = 0

    def _request(self, method, path, body=None):
        request = webob.Request.blank(path, method=method, headers={
            'OpenStack-API-Version': 'accelerator 2.3'})
        if body is not None:
            request.content_type = 'application/json'
            request.body = jsonutils.dump_as_bytes(body)
        return request.get_response(self.application)

    def _add_profiles(self, count):
        for _ in range(count):
            self.added += 1
            records.make_device_profile(
                self.context, name='profile-%03d' % self.added,
                groups=[{'resources:FPGA': '1'},
                        {'resources:CUSTOM_PCI': '2',
                         'trait:CUSTOM_PCI_PRODUCT_ID_1001': 'required'}])

    def _statements_for(self, path):
        """(number of SQL statements, response body) of GET ``path``."""
        self.statements = []
        response = self._request('GET', path)
        self.assertEqual(200, response.status_int, response.text)
        return len(self.statements), response.json_body

    def _names(self):
        return sorted(profile.name for profile in
                      objects.DeviceProfile.list(self.context))

    def test_list_costs_one_statement_whatever_its_length(self):
        self._add_profiles(SMALL)
        small_count, small_body = self._statements_for('/v2/device_profiles')
        self.assertEqual(SMALL, len(small_body['device_profiles']))
        self._add_profiles(LARGE - SMALL)
        large_count, large_body = self._statements_for('/v2/device_profiles')
        self.assertEqual(LARGE, len(large_body['device_profiles']))
        self.assertEqual(2, len(large_body['device_profiles'][-1]['groups']))
        self.assertEqual(small_count, large_count)
        self.assertLessEqual(large_count, 1)

    def test_name_filter_is_one_statement_with_in(self):
        path = '/v2/device_profiles?name=profile-001,profile-002,profile-099'
        self._add_profiles(SMALL)
        small_count, small_body = self._statements_for(path)
        self.assertEqual(['profile-001', 'profile-002'],
                         [profile['name'] for profile in
                          small_body['device_profiles']])
        self._add_profiles(LARGE - SMALL)
        large_count, large_body = self._statements_for(path)
        self.assertEqual(['profile-001', 'profile-002', 'profile-099'],
                         [profile['name'] for profile in
                          large_body['device_profiles']])
        self.assertEqual(small_count, large_count)
        self.assertLessEqual(large_count, 1)
        self.assertIn(' IN ', self.statements[-1])

    def test_a_profile_in_use_is_not_deleted(self):
        free = records.make_device_profile(self.context, name='free')
        used = records.make_device_profile(self.context, name='used')
        records.make_arq(self.context, used)

        for path in ('/v2/device_profiles/used',
                     '/v2/device_profiles/%s' % used.uuid,
                     '/v2/device_profiles?value=free,used'):
            response = self._request('DELETE', path)
            self.assertEqual(409, response.status_int, path)
            fault = jsonutils.loads(response.json_body['error_message'])
            self.assertEqual('Device profile used is used by accelerator '
                             'requests and cannot be deleted.',
                             fault['faultstring'])
        self.assertEqual(['free', 'used'], self._names())

        response = self._request('DELETE', '/v2/device_profiles/%s'
                                 % free.uuid)
        self.assertEqual(204, response.status_int, response.text)
        self.assertEqual(['used'], self._names())

    def test_create_several_is_one_transaction(self):
        records.make_device_profile(self.context, name='taken')
        body = [{'name': 'new-%d' % index,
                 'groups': [{'resources:FPGA': '1'}]} for index in range(3)]

        response = self._request('POST', '/v2/device_profiles',
                                 body + [{'name': 'taken', 'groups': [
                                     {'resources:FPGA': '1'}]}])
        self.assertEqual(409, response.status_int, response.text)
        self.assertEqual(['taken'], self._names())

        response = self._request('POST', '/v2/device_profiles', body)
        self.assertEqual(201, response.status_int, response.text)
        self.assertEqual(['new-0', 'new-1', 'new-2'],
                         [profile['name'] for profile in
                          response.json_body['device_profiles']])
        self.assertEqual(['new-0', 'new-1', 'new-2', 'taken'], self._names())


class TestDeviceProfilesAPIMySQL(TestDeviceProfilesAPI):

    backend = 'mysql'


class TestDeviceProfilesAPIPostgreSQL(TestDeviceProfilesAPI):

    backend = 'postgresql'
