"""Every list endpoint costs the same number of SQL statements for 2 rows as for 100.

The requests go through the real WSGI application (noauth) to a fresh
database (SQLite, and MariaDB and PostgreSQL when their servers answer);
a ``before_cursor_execute`` listener on its engine counts what each request
sends.
"""

import webob
from oslo_utils import uuidutils

from cyborg import context as cyborg_context
from cyborg.db.queries import attributes as attribute_queries
from cyborg.db.queries import deployables as deployable_queries
from cyborg.db.queries import devices as device_queries
from cyborg.tests.unit.api import real_app
from cyborg.tests.unit.db import records

SMALL = 2
LARGE = 100


class TestListQueryCounts(real_app.RealAppTestCase):

    def setUp(self):
        super().setUp()
        self.context = cyborg_context.RequestContext()
        self.added = 0
        self.first_deployable = None

    def _add_devices(self, count):
        """Devices on two hosts, each with a deployable holding two
        attributes, the second with two nested under it (one below the
        other)."""
        for _ in range(count):
            self.added += 1
            device = device_queries.create(self.context, {
                'uuid': uuidutils.generate_uuid(), 'type': 'FPGA',
                'vendor': '0x8086', 'model': 'PAC',
                'hostname': 'host-%d' % (self.added % 2)})
            deployable, _ = deployable_queries.create(self.context, {
                'uuid': uuidutils.generate_uuid(), 'name': 'fpga%d' % self.added,
                'num_accelerators': 1, 'device_id': device.id,
                'rp_uuid': uuidutils.generate_uuid()})
            parent_id = None
            for key, value in (('rc', 'FPGA'), ('trait1', 'CUSTOM_FAKE'),
                               ('board', None), ('shell', 'pac')):
                attribute = attribute_queries.create(self.context, {
                    'uuid': uuidutils.generate_uuid(),
                    'deployable_id': deployable.id, 'key': key,
                    'value': value, 'parent_attribute_id': parent_id})
                if key != 'rc':
                    parent_id = attribute.id
            if self.first_deployable is None:
                self.first_deployable = deployable.uuid

    def _statements_for(self, path, version='2.3'):
        """(number of SQL statements, response body) of GET ``path``."""
        self.statements = []
        response = webob.Request.blank(path, headers={
            'OpenStack-API-Version': 'accelerator ' + version}).get_response(
                self.application)
        self.assertEqual(200, response.status_int, response.text)
        return len(self.statements), response.json_body

    def _assert_constant(self, path, key, rows_per_device, version='2.3'):
        self._add_devices(SMALL)
        small_count, small_body = self._statements_for(path, version)
        self.assertEqual(SMALL * rows_per_device, len(small_body[key]))
        self._add_devices(LARGE - SMALL)
        large_count, large_body = self._statements_for(path, version)
        self.assertEqual(LARGE * rows_per_device, len(large_body[key]))
        self.assertEqual(small_count, large_count,
                         'GET %s: %d statements for %d rows, %d for %d'
                         % (path, small_count, SMALL, large_count, LARGE))
        return large_count

    def test_devices_list(self):
        count = self._assert_constant('/v2/devices', 'devices', 1)
        self.assertEqual(1, count)

    def test_devices_list_with_filters_and_marker(self):
        self._add_devices(1)
        marker = self._statements_for('/v2/devices')[1]['devices'][0]['uuid']
        path = '/v2/devices?hostname=host-1&sort_key=vendor&marker=' + marker
        small_count, _ = self._statements_for(path)
        self._add_devices(LARGE)
        large_count, body = self._statements_for(path)
        self.assertEqual(LARGE // 2, len(body['devices']))
        self.assertEqual(small_count, large_count)

    def test_deployables_list(self):
        count = self._assert_constant('/v2/deployables', 'deployables', 1)
        # One statement: each deployable's attributes_list is aggregated
        # by the database in it.
        self.assertEqual(1, count)

    def test_deployables_list_through_device_and_attributes(self):
        path = ('/v2/deployables?hostname=host-1&vendor=0x8086'
                '&attribute=rc:FPGA&sort_key=hostname')
        self._add_devices(SMALL)
        small_count, small_body = self._statements_for(path)
        self.assertEqual(SMALL // 2, len(small_body['deployables']))
        self._add_devices(LARGE - SMALL)
        large_count, large_body = self._statements_for(path)
        self.assertEqual(LARGE // 2, len(large_body['deployables']))
        self.assertEqual(small_count, large_count)

    def test_deployables_of_one_device_by_its_uuid(self):
        # One statement (the device joined), however many devices there are.
        counts = []
        for total in (SMALL, LARGE):
            self._add_devices(total - (SMALL if total == LARGE else 0))
            devices = self._statements_for('/v2/devices?limit=1000')[1]
            device = devices['devices'][-1]
            count, body = self._statements_for(
                '/v2/deployables?device_uuid=%s' % device['uuid'])
            # Each device of _add_devices has one deployable.
            self.assertEqual(1, len(body['deployables']))
            counts.append(count)
        self.assertEqual([1, 1], counts)

    def test_attributes_list(self):
        count = self._assert_constant('/v2/attributes', 'attributes', 4)
        self.assertEqual(1, count)

    def test_deployables_list_at_2_4(self):
        count = self._assert_constant('/v2/deployables?programmed=false',
                                      'deployables', 1, version='2.4')
        # One page of deployables (their parents' and roots' uuids joined,
        # their attributes aggregated) and, as these have nested
        # attributes, one of the attributes of those.
        self.assertEqual(2, count)

    def test_devices_list_at_2_6(self):
        # Health as stored and each drain's state derived in the same
        # statement.
        self.assertEqual(1, self._assert_constant(
            '/v2/devices', 'devices', 1, version='2.6'))

    def test_deployables_list_at_2_6(self):
        # As at 2.4: health and drain come in the page's statement.
        self.assertEqual(2, self._assert_constant(
            '/v2/deployables?programmed=false', 'deployables', 1,
            version='2.6'))

    def test_attributes_list_at_2_4(self):
        count = self._assert_constant('/v2/attributes', 'attributes', 2,
                                      version='2.4')
        # One page of top-level attributes and one recursive query of
        # everything nested under them.
        self.assertLessEqual(count, 2)
        # The page's plain rows, read by name under their nested ones.
        _, body = self._statements_for('/v2/attributes?limit=2', '2.4')
        trait, = [attribute for attribute in body['attributes']
                  if attribute['key'] == 'trait1']
        board, = trait['children']
        self.assertEqual(
            ('board', trait['uuid'], 'shell', board['uuid'], 'pac'),
            (board['key'], board['parent_attribute_uuid'],
             board['children'][0]['key'],
             board['children'][0]['parent_attribute_uuid'],
             board['children'][0]['value']))

    def _add_arqs(self, count):
        """ARQs of their own profile each, every other one Bound to an
        attach handle (the list joins both)."""
        for index in range(count):
            profile = records.make_device_profile(self.context)
            values = {}
            if index % 2:
                tree = records.DeviceTree(self.context, handles=1)
                values = {'state': 'Bound', 'hostname': 'host-1',
                          'instance_uuid': uuidutils.generate_uuid(),
                          'attach_handle_id': tree.attach_handles[0].id,
                          'deployable_id': tree.deployable.id}
            records.make_arq(self.context, profile, **values)

    def test_arqs_list(self):
        self._add_arqs(SMALL)
        small_count, small_body = self._statements_for(
            '/v2/accelerator_requests')
        self._add_arqs(LARGE - SMALL)
        large_count, large_body = self._statements_for(
            '/v2/accelerator_requests')
        self.assertEqual(SMALL, len(small_body['arqs']))
        self.assertEqual(LARGE, len(large_body['arqs']))
        self.assertEqual(LARGE // 2, len([
            arq for arq in large_body['arqs']
            if arq['attach_handle_type'] == 'TEST_PCI'
            and arq['attach_handle_info']['bus'] == '0c']))
        self.assertEqual(small_count, large_count)
        # The ARQs joined to their profiles and attach handles.
        self.assertEqual(1, large_count)

    def test_device_profiles_list(self):
        for _ in range(SMALL):
            records.make_device_profile(self.context)
        small_count, _ = self._statements_for('/v2/device_profiles')
        for _ in range(LARGE - SMALL):
            records.make_device_profile(self.context)
        large_count, body = self._statements_for('/v2/device_profiles')
        self.assertEqual(LARGE, len(body['device_profiles']))
        self.assertEqual([{'resources:FPGA': '1',
                           'trait:CUSTOM_FAKE_DEVICE': 'required'}],
                         body['device_profiles'][-1]['groups'])
        self.assertEqual(small_count, large_count)
        self.assertEqual(1, large_count)

    def test_attributes_of_a_deployable(self):
        self._add_devices(SMALL)
        path = '/v2/deployables/%s/attributes' % self.first_deployable
        small_count, small_body = self._statements_for(path, '2.4')
        self._add_devices(LARGE - SMALL)
        large_count, large_body = self._statements_for(path, '2.4')
        self.assertEqual(small_body, large_body)
        self.assertEqual(['rc', 'trait1'], [attribute['key'] for attribute
                                            in large_body['attributes']])
        self.assertEqual('shell', large_body['attributes'][1]['children'][0][
            'children'][0]['key'])
        self.assertEqual(small_count, large_count)
        self.assertLessEqual(large_count, 2)


class TestListQueryCountsMySQL(TestListQueryCounts):

    backend = 'mysql'


class TestListQueryCountsPostgreSQL(TestListQueryCounts):

    backend = 'postgresql'
