"""Path parameters are checked against their declarations before routing.

tools/run-fuzz.sh sent text of every kind where the document said "a
uuid": each malformed value must be the 404 (or the route's own 400) in
Cyborg's error body, without one SQL statement, on SQLite, MariaDB and
PostgreSQL (a NUL cannot be a parameter there).
"""

import json
import re

import webob

from cyborg.api import openapi
from cyborg.api.schemas import paths
from cyborg.api.schemas import routes
from cyborg.tests import base
from cyborg.tests.unit.api import real_app

UUID = '2b0dfcab-6812-4d5b-afe5-5bbb13cc5375'
# As a URL carries them: percent-encoded.
MALFORMED = ('not-a-uuid', 'a%00b', '%F0%9F%98%80', '2b0dfcab-6812-4d5b-'
             'afe5-5bbb13cc537', UUID + 'x', '%20' + UUID)
RESOURCES = {'devices': 'Device', 'deployables': 'Deployable',
             'attributes': 'Attribute', 'device_profiles': 'DeviceProfile',
             'accelerator_requests': 'ARQ'}


def _fault(response):
    return json.loads(json.loads(response.text)['error_message'])


class RouteMatchTest(base.TestCase):

    def test_match_names_the_route_and_its_parameters(self):
        route, values = routes.match(
            'PATCH', '/v2/deployables/a/program/b')
        self.assertEqual('programDeployableTwice', route.operation_id)
        self.assertEqual({'uuid': 'a', 'same_uuid': 'b'}, values)

    def test_match_takes_literal_segments_literally(self):
        self.assertIsNone(routes.match('GET', '/v2/openapiXjson'))
        self.assertIsNone(routes.match('GET', '/v2/devices/'))
        self.assertIsNone(routes.match('PUT', '/v2/devices/%s' % UUID))

    def test_a_route_may_declare_its_own_parameter(self):
        route, _values = routes.match('DELETE',
                                      '/v2/accelerator_requests/x')
        self.assertIsNot(paths.UUID, paths.declaration(route, 'uuid'))
        route, _values = routes.match('GET', '/v2/accelerator_requests/x')
        self.assertIs(paths.UUID, paths.declaration(route, 'uuid'))

    def test_every_path_parameter_of_the_document_is_constrained(self):
        for path, operations in openapi.document()['paths'].items():
            for method, operation in operations.items():
                for parameter in operation.get('parameters', ()):
                    if parameter.get('in') != 'path':
                        continue
                    schema = parameter['schema']
                    self.assertIn('pattern', schema, '%s %s' % (method,
                                                                path))
                    if parameter['name'] in ('uuid', 'same_uuid'):
                        self.assertIsNone(re.search(
                            schema['pattern'], 'not-a-uuid'), path)
                        self.assertIsNotNone(re.search(
                            schema['pattern'], UUID), path)


class PathParameterTest(real_app.RealAppTestCase):

    def _send(self, method, path):
        request = webob.Request.blank(path, method=method)
        if method in ('POST', 'PATCH'):
            request.headers['Content-Type'] = 'application/json'
            request.body = b'[]'
        return request.get_response(self.application)

    def _requests(self, value):
        """(route, path) of every operation with a path parameter, the
        first one ``value`` and any other a well-formed uuid."""
        for route in routes.ROUTES:
            names = re.findall('{([a-z_]+)}', route.path)
            if not names:
                continue
            path = route.path.replace('{%s}' % names[0], value, 1)
            for name in names[1:]:
                path = path.replace('{%s}' % name, UUID)
            yield route, path

    def test_a_malformed_value_names_nothing_without_sql(self):
        for value in MALFORMED:
            for route, path in self._requests(value):
                if route.operation_id == 'deleteARQ' and \
                        value.startswith('%20'):
                    # Its list of uuids may have spaces around each.
                    continue
                self.statements.clear()
                response = self._send(route.method, path)
                described = '%s %s: %s' % (route.method, path, response.text)
                self.assertEqual([], self.statements, described)
                fault = _fault(response)['faultstring']
                if route.operation_id == 'deleteARQ':
                    self.assertEqual(400, response.status_int, described)
                    self.assertIn('must be comma-separated ARQ UUIDs',
                                  fault, described)
                    continue
                if route.operation_id == 'deleteDeviceProfile' and \
                        '%00' in value:
                    # A list of names, like deleteARQ's list of uuids.
                    self.assertEqual(400, response.status_int, described)
                    self.assertIn('must be a comma-separated list of names',
                                  fault, described)
                    continue
                if route.operation_id.startswith('programDeployable'):
                    self.assertEqual(400, response.status_int, described)
                    self.assertTrue(fault.startswith('Expected a UUID'),
                                    described)
                    continue
                if route.operation_id == 'prefetchBitstream':
                    # An image id, not a row: the route's own 400.
                    self.assertEqual(400, response.status_int, described)
                    self.assertTrue(
                        fault.startswith('Expected a Glance image id'),
                        described)
                    continue
                if route.operation_id in ('showDeviceProfile',
                                          'deleteDeviceProfile') and \
                        '%00' not in value:
                    # Any other text may be a profile's name.
                    continue
                self.assertEqual(404, response.status_int, described)
                resource = RESOURCES[path.split('/')[2]]
                self.assertTrue(fault.startswith('%s not found with '
                                                 % resource), described)

    def test_programming_refuses_a_malformed_uuid_with_400(self):
        for path in ('/v2/deployables/x/program',
                     '/v2/deployables/%s/program/x' % UUID):
            response = self._send('PATCH', path)
            self.assertEqual(400, response.status_int)
            self.assertEqual('Expected a UUID but received x.',
                             _fault(response)['faultstring'])
        self.assertEqual([], self.statements)

    def test_a_well_formed_uuid_of_no_row_is_looked_up(self):
        for value in (UUID, UUID.upper(), UUID.replace('-', '')):
            response = self._send('GET', '/v2/devices/%s' % value)
            self.assertEqual(404, response.status_int, value)
            self.assertEqual('Device not found with uuid=%s' % value,
                             _fault(response)['faultstring'])
        self.assertNotEqual([], self.statements)

    def test_a_name_with_nul_is_no_device_profile(self):
        response = webob.Request.blank(
            '/v2/device_profiles/a%00b', headers={
                'OpenStack-API-Version': 'accelerator 2.2'}).get_response(
            self.application)
        self.assertEqual(404, response.status_int)
        self.assertEqual('DeviceProfile not found with name=a\x00b',
                         _fault(response)['faultstring'])
        self.assertEqual([], self.statements)


class PathParameterMySQLTest(PathParameterTest):

    backend = 'mysql'


class PathParameterPostgreSQLTest(PathParameterTest):

    backend = 'postgresql'
