"""The OpenAPI document: valid, served as checked in, public, and true.

True to the application: every route of the table answers (its policy
refuses a caller without the rule; the document's routes are public by
design), a method the table does not declare is a 405 naming the
declared ones, real answers at each microversion match the response
schemas, and the limits are the database columns'.
"""

import json
import os
import pathlib

import fixtures
import jsonschema
import openapi_spec_validator
import sqlalchemy as sa
import webob
from keystonemiddleware import fixture as auth_fixture

from cyborg import context as cyborg_context
from cyborg import policies
from cyborg.api import app
from cyborg.api import auth
from cyborg.api import openapi
from cyborg.api.schemas import attributes as attribute_schemas
from cyborg.common import columns
from cyborg.api.schemas import device_profiles as device_profile_schemas
from cyborg.api.schemas import routes
from cyborg.db import models
from cyborg.objects import arq_binding
from cyborg.tests import base
from cyborg.tests.unit.api import real_app
from cyborg.tests.unit.db import records

CHECKED_IN = pathlib.Path(__file__).resolve().parents[4] / 'api-ref' / \
    'source' / 'openapi.json'
REGENERATE = 'python -m cyborg.api.openapi > api-ref/source/openapi.json'
UUID = '2b0dfcab-6812-4d5b-afe5-5bbb13cc5375'
VERSIONS = ('2.0', '2.1', '2.2', '2.3', '2.4', '2.5', '2.6')
# The routes that exist from a microversion on (an unknown path below it).
ROUTES_FROM = {'/v2/deployables/{uuid}/attributes': '2.4',
               '/v2/deployables/{uuid}/attributes/{key}': '2.4',
               '/v2/devices/{uuid}/history': '2.5',
               '/v2/deployables/{uuid}/history': '2.5'}
METHODS = ('GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'TRACE')


def concrete(path):
    """``path`` with a value in each of its placeholders."""
    return path.replace('{uuid_or_name}', UUID).replace(
        '{same_uuid}', UUID).replace('{uuid}', UUID).replace(
        '{image_id}', UUID)


def as_tuple(version):
    """``'2.10'`` as ``(2, 10)``, which compares as versions do."""
    return tuple(int(part) for part in version.split('.'))


def send(application, method, path, body=None, headers=None):
    request = webob.Request.blank(path, method=method,
                                  headers=dict(headers or {}))
    if body is not None:
        request.content_type = 'application/json'
        request.body = json.dumps(body).encode()
    return request.get_response(application)


def fault(response):
    return json.loads(response.json_body['error_message'])['faultstring']


class TestDocument(base.TestCase):

    def test_document_is_valid_openapi_3_1(self):
        document = openapi.document()
        self.assertEqual('3.1.0', document['openapi'])
        openapi_spec_validator.validate(document)

    def test_checked_in_document_is_the_generated_one(self):
        self.assertEqual(openapi.render(openapi.document()),
                         CHECKED_IN.read_text(encoding='utf-8'),
                         'api-ref/source/openapi.json is stale: ' + REGENERATE)

    def test_every_route_is_in_the_document_once(self):
        paths = openapi.document()['paths']
        operations = sorted((method.upper(), path)
                            for path, item in paths.items()
                            for method in item)
        self.assertEqual(sorted((route.method, route.path)
                                for route in routes.ROUTES), operations)
        self.assertEqual(len(routes.ROUTES), len(
            {route.operation_id for route in routes.ROUTES}))

    def test_the_largest_page_is_the_one_handed_in(self):
        parameters = openapi.document(max_limit=7)['paths']['/v2/devices'][
            'get']['parameters']
        limit = [parameter for parameter in parameters
                 if parameter.get('name') == 'limit'][0]
        self.assertEqual({'type': 'integer', 'minimum': 1, 'maximum': 7},
                         limit['schema'])

    def test_every_request_schema_is_a_valid_json_schema(self):
        for item in openapi.document()['paths'].values():
            for operation in item.values():
                schemas = [parameter['schema']
                           for parameter in operation.get('parameters', [])
                           if 'schema' in parameter]
                body = operation.get('requestBody')
                if body:
                    schemas.append(body['content']['application/json'][
                        'schema'])
                for schema in schemas:
                    jsonschema.Draft202012Validator.check_schema(schema)


class TestServedDocument(base.TestCase):

    def test_served_document_is_the_checked_in_one(self):
        self.flags(auth_strategy='noauth')
        policies.reset()
        self.addCleanup(policies.reset)
        for path in ('/v2/openapi.json', '/openapi.json'):
            response = send(app.setup_app(), 'GET', path)
            self.assertEqual(200, response.status_int)
            self.assertEqual('application/json', response.content_type)
            self.assertEqual(json.loads(CHECKED_IN.read_text('utf-8')),
                             response.json_body, REGENERATE)

    def test_served_document_names_the_configured_largest_page(self):
        self.flags(auth_strategy='noauth')
        self.flags(max_limit=7, group='api')
        response = send(app.setup_app(), 'GET', '/v2/openapi.json')
        self.assertEqual(openapi.document(max_limit=7), response.json_body)


class TestPublicRoutes(base.TestCase):
    """With Keystone: the public routes need no token, the others do."""

    def setUp(self):
        super().setUp()
        self.flags(auth_strategy='keystone')
        self.flags(group='keystone_authtoken',
                   www_authenticate_uri='http://127.0.0.1:9/identity')
        policies.reset()
        self.addCleanup(policies.reset)
        self.useFixture(auth_fixture.AuthTokenFixture())
        self.application = app.setup_app()

    def test_public_routes_answer_without_a_token(self):
        public = [route for route in routes.ROUTES if route.is_public]
        self.assertEqual({'/', '/v2', routes.OPENAPI_PATH},
                         {route.path for route in public})
        for route in public:
            self.assertIn(route.path, auth.PUBLIC_PATHS)
            response = send(self.application, route.method, route.path)
            self.assertEqual(200, response.status_int, route.path)

    def test_every_other_route_needs_a_token(self):
        for route in routes.ROUTES:
            if route.is_public:
                continue
            self.assertNotIn(route.path, auth.PUBLIC_PATHS)
            response = send(self.application, route.method,
                            concrete(route.path))
            self.assertEqual(401, response.status_int, route.path)
            self.assertIn('401', json.dumps(openapi.document()['paths'][
                route.path][route.method.lower()]['responses']))


class TestRoutesEnforceTheirPolicies(base.TestCase):
    """Every protected route refuses a caller its rules refuse (403, the
    rule named) before anything else; the public ones have no rule."""

    def setUp(self):
        super().setUp()
        self.flags(auth_strategy='noauth')
        directory = self.useFixture(fixtures.TempDir()).path
        policy_file = os.path.join(directory, 'policy.yaml')
        rules = {rule for route in routes.ROUTES for rule in route.policies}
        with open(policy_file, 'w') as rules_file:
            for rule in sorted(rules):
                rules_file.write('"%s": "!"\n' % rule)
        self.flags(policy_file=policy_file, group='oslo_policy')
        policies.reset()
        self.addCleanup(policies.reset)
        self.application = app.setup_app()

    def test_each_route_names_registered_rules(self):
        registered = {rule.name for rule in policies.list_rules()}
        for route in routes.ROUTES:
            self.assertLessEqual(set(route.policies), registered, route.path)

    def test_each_protected_route_enforces_its_rules(self):
        for route in routes.ROUTES:
            body = [] if route.body is not None else None
            # The newest microversion, where every route exists.
            response = send(self.application, route.method,
                            concrete(route.path), body=body,
                            headers={'OpenStack-API-Version': 'latest'})
            if route.is_public:
                self.assertEqual(200, response.status_int, route.path)
                continue
            self.assertEqual(403, response.status_int,
                             '%s %s' % (route.method, route.path))
            self.assertTrue(any(rule in fault(response)
                                for rule in route.policies), fault(response))


class TestMethodsNotDeclared(base.TestCase):

    def test_a_method_the_table_does_not_declare_is_405(self):
        self.flags(auth_strategy='noauth')
        application = app.setup_app()
        declared = {}
        for route in routes.ROUTES:
            methods = {route.method} | ({'HEAD'} if route.is_public else set())
            declared.setdefault(route.path, set()).update(methods)
        for path, allowed in declared.items():
            for method in set(METHODS) - allowed:
                response = send(application, method, concrete(path))
                self.assertEqual(405, response.status_int,
                                 '%s %s' % (method, path))
                self.assertEqual(sorted(allowed), sorted(
                    response.headers['Allow'].split(', ')), path)
                if method != 'HEAD':
                    self.assertIn('is not allowed', fault(response))


class TestColumnLimits(base.TestCase):
    """The request limits are those of the columns in cyborg/db/models.py."""

    def _column(self, model, name):
        return model.__table__.columns[name].type

    def test_columns_are_read_from_the_models(self):
        for object_name, model in (('Attribute', models.Attribute),
                                   ('ARQ', models.ARQ),
                                   ('Device', models.Device),
                                   ('DeviceProfile', models.DeviceProfile),
                                   ('Deployable', models.Deployable)):
            for name, column in model.__table__.columns.items():
                if model is models.Deployable and \
                        name in models.DEPLOYABLE_DERIVED_COLUMNS:
                    # A copy of the attributes that no request reaches.
                    self.assertRaises(KeyError, columns.of, object_name,
                                      name)
                elif isinstance(column.type, sa.Text):
                    self.assertEqual(65535, columns.of(object_name,
                                                       name).max_bytes)
                elif isinstance(column.type, sa.String):
                    self.assertEqual(column.type.length, columns.of(
                        object_name, name).max_length, name)
                elif type(column.type) is sa.Integer:
                    self.assertEqual(2 ** 31 - 1, columns.of(
                        object_name, name).maximum, name)

    def test_request_limits_are_the_columns(self):
        self.assertEqual(self._column(models.Attribute, 'key').length,
                         attribute_schemas.KEY_LENGTH)
        self.assertEqual(65535, attribute_schemas.VALUE_BYTES)
        self.assertEqual(self._column(models.DeviceProfile, 'name').length,
                         device_profile_schemas.NAME_LENGTH)
        self.assertEqual(self._column(models.ARQ, 'hostname').length,
                         arq_binding.HOSTNAME_LENGTH)
        self.assertEqual(self._column(models.ARQ, 'project_id').length,
                         arq_binding.PROJECT_ID_LENGTH)
        body = attribute_schemas.ATTRIBUTE.schema()['properties']
        # An integer, or its digits in a string (upstream's sample).
        integer, digits = body['deployable_id']['anyOf']
        self.assertEqual(2 ** 31 - 1, integer['maximum'])
        self.assertEqual('string', digits['type'])
        self.assertEqual(self._column(models.Attribute, 'key').length,
                         body['key']['maxLength'])
        self.assertEqual(65535, body['value']['x-max-bytes'])


class TestAnswersMatchTheDocument(real_app.RealAppTestCase):
    """Real answers, at every microversion, against the response schemas."""

    conductor_server = 'openapi-test'

    def setUp(self):
        super().setUp()
        context = cyborg_context.get_admin_context()
        self.tree = records.DeviceTree(context, handles=1)
        # A nested attribute, so that 2.4's children are checked too.
        board = records.make_attribute(context, self.tree.deployable,
                                       key='board', value=None)
        records.make_attribute(context, self.tree.deployable, key='shell',
                               value='pac', parent_attribute_id=board.id)
        profile = records.make_device_profile(context)
        self.arq = records.make_arq(context, profile)
        self.profile = profile
        document = openapi.document()
        self.paths = document['paths']
        self.components = document['components']['schemas']

    def _validate(self, route, response):
        operation = self.paths[route.path][route.method.lower()]
        answer = operation['responses'][str(response.status_int)]
        schema = answer['content']['application/json']['schema']
        name = schema['$ref'].rsplit('/', 1)[1]
        # The component, with the others where its $refs point.
        schema = dict(self.components[name],
                      components={'schemas': self.components})
        jsonschema.Draft202012Validator(schema).validate(response.json_body)

    def test_every_read_matches_its_schema_at_every_microversion(self):
        values = {'{uuid}': None, '{uuid_or_name}': self.profile.uuid}
        item_uuids = {'devices': self.tree.device.uuid,
                      'deployables': self.tree.deployable.uuid,
                      'attributes': self.tree.attribute.uuid,
                      'accelerator_requests': self.arq.uuid}
        for version in VERSIONS:
            for route in routes.ROUTES:
                if route.method != 'GET' or as_tuple(ROUTES_FROM.get(
                        route.path, version)) > as_tuple(version):
                    continue
                path = route.path.replace(
                    '{uuid_or_name}', values['{uuid_or_name}']).replace(
                    '{key}', 'board')
                if '{uuid}' in path:
                    path = path.replace('{uuid}',
                                        item_uuids[path.split('/')[2]])
                response = send(self.application, 'GET', path, headers={
                    'OpenStack-API-Version': 'accelerator ' + version})
                self.assertEqual(200, response.status_int, path)
                self._validate(route, response)

    def test_fields_of_a_microversion_appear_from_it_on(self):
        for name, path in (('Device', '/v2/devices/' + self.tree.device.uuid),
                           ('ARQ', '/v2/accelerator_requests/'
                            + self.arq.uuid),
                           ('Deployable', '/v2/deployables/'
                            + self.tree.deployable.uuid),
                           ('Attribute', '/v2/attributes/'
                            + self.tree.attribute.uuid)):
            versioned = {field: schema[openapi.resources.MICROVERSION]
                         for field, schema in self.components[name][
                             'properties'].items()
                         if openapi.resources.MICROVERSION in schema}
            self.assertTrue(versioned, name)
            for field, first in versioned.items():
                major, minor = first.split('.')
                before = '%s.%d' % (major, int(minor) - 1)
                self.assertNotIn(field, send(
                    self.application, 'GET', path, headers={
                        'OpenStack-API-Version': before}).json_body)
                self.assertIn(field, send(
                    self.application, 'GET', path, headers={
                        'OpenStack-API-Version': first}).json_body)

    def test_routes_of_a_microversion_are_unknown_below_it(self):
        uuids = {'devices': self.tree.device.uuid,
                 'deployables': self.tree.deployable.uuid}
        for path, first in ROUTES_FROM.items():
            path = path.replace('{uuid}', uuids[path.split('/')[2]]).replace(
                '{key}', 'rc')
            major, minor = first.split('.')
            before = '%s.%d' % (major, int(minor) - 1)
            self.assertEqual(404, send(self.application, 'GET', path, headers={
                'OpenStack-API-Version': before}).status_int, path)
            self.assertEqual(200, send(self.application, 'GET', path, headers={
                'OpenStack-API-Version': first}).status_int, path)
