"""Every row of a list (devices, deployables, attributes, ARQs, device
profiles) equals its GET of one.

The lists render database rows straight, the single GETs render objects;
these tests hold the two to the same bytes per row, at microversions 2.0,
2.3, 2.4 and 2.6 (health and drain), with NULL and non-NULL optional columns, through the real WSGI
application (noauth) on SQLite, MariaDB and PostgreSQL. A single deployable
is rendered from its row too; the object a program request answers with
renders the same bytes as that row.
"""

import datetime
import json

import webob
from oslo_utils import uuidutils

import microversion_parse

from cyborg.api import app
from cyborg.api import responses
from cyborg import context as cyborg_context
from cyborg import objects
from cyborg import policies
from cyborg.db.queries import attributes as attribute_queries
from cyborg.db.queries import deployables as deployable_queries
from cyborg.db.queries import devices as device_queries
from cyborg.api.views import deployables as deployable_views
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.unit.db import records

VERSIONS = ('2.0', '2.3', '2.4', '2.6')


def _answered(body):
    """``body`` (a view's dict) as the answer's encoder writes it, read
    back: a PostgreSQL row's timestamps are datetimes until then."""
    return json.loads(responses.JsonRenderer(None, None).render(None, body))


class TestListMatchesShow(base.TestCase):

    backend = 'sqlite'

    def setUp(self):
        super().setUp()
        self.flags(auth_strategy='noauth')
        policies.reset()
        self.addCleanup(policies.reset)
        self.useFixture(database.Database(backend=self.backend,
                                          schema='migrations'))
        self.context = cyborg_context.RequestContext()
        self.application = app.setup_app()
        self._add_inventory()

    def _add_inventory(self):
        """Two devices: one with every optional column set, one with none."""
        updated = datetime.datetime(2026, 11, 23, 1, 2, 3, 456789)
        for index in range(2):
            full = index == 0
            device = device_queries.create(self.context, {
                'uuid': uuidutils.generate_uuid(), 'type': 'FPGA',
                'vendor': '0x8086', 'model': 'PAC', 'hostname': 'host-%d' % index,
                'std_board_info': '{"class": "fpga"}' if full else None,
                'vendor_board_info': 'rev é' if full else None,
                'status': 'maintaining' if full else 'enabled',
                'status_reason': 'repair' if full else None})
            parent, _ = deployable_queries.create(self.context, {
                'uuid': uuidutils.generate_uuid(), 'name': 'fpga%d' % index,
                'num_accelerators': 0, 'device_id': device.id})
            child, _ = deployable_queries.create(self.context, {
                'uuid': uuidutils.generate_uuid(), 'name': 'vf%d' % index,
                'num_accelerators': 1, 'device_id': device.id,
                'parent_id': parent.id, 'root_id': parent.id,
                'rp_uuid': uuidutils.generate_uuid() if full else None,
                'driver_name': 'fake' if full else None,
                'bitstream_id': 'bits' if full else None})
            if full:
                # Degraded and draining: its child holds a handle in use.
                device_queries.update(self.context, device.uuid, {
                    'updated_at': updated, 'health': 'degraded',
                    'health_reason': 'AER non-fatal', 'health_since': updated,
                    'drain_since': updated})
                deployable_queries.update(self.context, child.uuid, {
                    'updated_at': updated, 'drain_since': updated})
                records.make_attach_handle(
                    self.context, child,
                    records.make_controlpath_id(self.context, device),
                    in_use=True)
                for key, value in (('rc', 'FPGA'), ('trait0', 'CUSTOM_A'),
                                   ('empty', None)):
                    attribute_queries.create(self.context, {
                        'uuid': uuidutils.generate_uuid(),
                        'deployable_id': child.id, 'key': key,
                        'value': value})
            else:
                # Drained: no handle below it is in use.
                deployable_queries.update(self.context, parent.uuid,
                                          {'drain_since': updated})

    def _get(self, path, version):
        response = webob.Request.blank(path, headers={
            'OpenStack-API-Version': 'accelerator %s' % version}).get_response(
                self.application)
        self.assertEqual(200, response.status_int, response.text)
        return response.json_body

    def _assert_rows_match(self, resource, version, expected_rows):
        listed = self._get('/v2/%s' % resource, version)[resource]
        self.assertEqual(expected_rows, len(listed))
        for row in listed:
            shown = self._get('/v2/%s/%s' % (resource, row['uuid']), version)
            self.assertEqual(shown, row)
            self.assertEqual(list(shown), list(row))
        return listed

    def test_deployables(self):
        for version in VERSIONS:
            listed = self._assert_rows_match('deployables', version, 4)
            with_attributes = [row for row in listed if row['attributes_list'] != '[]']
            self.assertEqual(1, len(with_attributes))
            self.assertEqual(
                '[{"rc": "FPGA"}, {"trait0": "CUSTOM_A"}, {"empty": null}]',
                with_attributes[0]['attributes_list'])
            self.assertIn(with_attributes[0]['updated_at'],
                          ('2026-11-23T01:02:03.456789+00:00',
                           '2026-11-23T01:02:03+00:00'))

    def test_deployables_filtered_and_sorted(self):
        path = '/v2/deployables?attribute=rc:FPGA&sort_key=hostname&sort_dir=desc'
        for version in VERSIONS:
            listed = self._get(path, version)['deployables']
            self.assertEqual(1, len(listed))
            self.assertEqual(
                self._get('/v2/deployables/%s' % listed[0]['uuid'], version),
                listed[0])

    def test_a_deployable_object_renders_as_its_row(self):
        version = microversion_parse.Version(2, 3)
        listed = self._get('/v2/deployables', '2.3')['deployables']
        for row in listed:
            deployable = objects.Deployable.get_by_uuid(self.context,
                                                        row['uuid'])
            self.assertEqual(row, _answered(deployable_views.one(
                deployable, 'http://localhost')))
            self.assertEqual(row, _answered(deployable_views.one_row(
                objects.Deployable.get_row(
                    self.context, row['uuid'],
                    **deployable_views.row_options(version)),
                version, 'http://localhost')))

    def test_attributes(self):
        for version in VERSIONS:
            self._assert_rows_match('attributes', version, 3)

    def test_devices(self):
        for version in VERSIONS:
            listed = self._assert_rows_match('devices', version, 2)
            self.assertEqual(version != '2.0', 'status' in listed[0])
            self.assertIn('+00:00', listed[0]['created_at'])
            self.assertEqual(version == '2.6', 'health' in listed[0])
        listed = self._get('/v2/devices', '2.6')['devices']
        self.assertEqual(
            [('degraded', 'AER non-fatal', 'draining'),
             ('healthy', None, None)],
            [(row['health'], row['health_reason'], row['drain'])
             for row in listed])
        self.assertIn(listed[0]['health_since'],
                      ('2026-11-23T01:02:03.456789+00:00',
                       '2026-11-23T01:02:03+00:00'))

    def test_deployables_show_their_drain_at_2_6(self):
        listed = self._get('/v2/deployables', '2.6')['deployables']
        self.assertEqual(
            {'fpga0': None, 'vf0': 'draining', 'fpga1': 'drained',
             'vf1': None},
            {row['name']: row['drain'] for row in listed})
        self.assertEqual({'healthy'}, {row['health'] for row in listed})
        self.assertNotIn('health', self._get('/v2/deployables',
                                             '2.5')['deployables'][0])


    def _add_requests(self):
        """A profile with two groups and a non-ASCII description, and one
        ARQ of each shape: Initial, Bound to an attach handle, BindFailed
        with its reason."""
        profile = records.make_device_profile(
            self.context, description='deux FPGA, é',
            groups=[{'resources:FPGA': '1'},
                    {'resources:FPGA': '1', 'trait:CUSTOM_B': 'required'}])
        records.make_device_profile(self.context, description=None)
        tree = records.DeviceTree(self.context, handles=1)
        records.make_arq(self.context, profile)
        records.make_arq(
            self.context, profile, state='Bound', hostname='host-0',
            device_rp_uuid=uuidutils.generate_uuid(),
            instance_uuid=uuidutils.generate_uuid(), project_id='p',
            attach_handle_id=tree.attach_handles[0].id,
            deployable_id=tree.deployable.id)
        records.make_arq(self.context, profile, state='BindFailed',
                         device_profile_group_id=1,
                         state_reason='no free handle')

    def test_arqs(self):
        self._add_requests()
        for version in VERSIONS:
            listed = self._get('/v2/accelerator_requests', version)['arqs']
            self.assertEqual(3, len(listed))
            for row in listed:
                shown = self._get('/v2/accelerator_requests/%s' % row['uuid'],
                                  version)
                self.assertEqual(shown, row)
                self.assertEqual(list(shown), list(row))
            self.assertEqual(version != '2.0', 'state_reason' in listed[0])
            self.assertEqual(['', 'TEST_PCI', ''], [
                row['attach_handle_type'] for row in listed])

    def test_device_profiles(self):
        self._add_requests()
        for version in VERSIONS:
            listed = self._get('/v2/device_profiles', version)[
                'device_profiles']
            self.assertEqual(2, len(listed))
            for row in listed:
                shown = self._get('/v2/device_profiles/%s' % row['uuid'],
                                  version)['device_profile']
                self.assertEqual(shown, row)
                self.assertEqual(list(shown), list(row))
            self.assertEqual(2, len(listed[0]['groups']))


class TestListMatchesShowMySQL(TestListMatchesShow):

    backend = 'mysql'


class TestListMatchesShowPostgreSQL(TestListMatchesShow):

    backend = 'postgresql'
