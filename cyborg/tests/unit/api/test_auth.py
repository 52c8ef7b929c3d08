"""Authentication of the whole application: keystonemiddleware and noauth.

Tokens are validated by keystonemiddleware's AuthTokenFixture, which
replaces only the call to Keystone; the request context a request ends up
with is read from oslo.context's per-thread current context.
"""

import json

import webob
from keystonemiddleware import fixture as auth_fixture
from oslo_context import context as oslo_context
from oslo_middleware import cors

from cyborg.api import app
from cyborg.api import auth
from cyborg import conf
from cyborg import policies
from cyborg.tests import base

USER_TOKEN = 'user-token'
SERVICE_TOKEN = 'service-token'
READER_TOKEN = 'reader-token'


def request(application, path, method='GET', headers=None):
    """Send one request through ``application``; return the response."""
    return webob.Request.blank(path, method=method,
                               headers=headers or {}).get_response(
                                   application)


def fault(response):
    """The decoded fault of a Cyborg error body."""
    body = response.json_body
    return json.loads(body['error_message'])


class TestKeystoneAuth(base.TestCase):
    """auth_strategy = keystone: a token is needed except for the version
    documents and the health check."""

    def setUp(self):
        super().setUp()
        self.flags(auth_strategy='keystone')
        self.flags(group='keystone_authtoken',
                   www_authenticate_uri='http://127.0.0.1:9/identity')
        policies.reset()
        self.addCleanup(policies.reset)
        tokens = self.useFixture(auth_fixture.AuthTokenFixture())
        tokens.add_token_data(token_id=USER_TOKEN, user_id='user-1',
                              project_id='project-1',
                              role_list=['member', 'reader'])
        tokens.add_token_data(token_id=READER_TOKEN, user_id='user-2',
                              project_id='project-2', role_list=['reader'])
        tokens.add_token_data(token_id=SERVICE_TOKEN, user_id='nova',
                              project_id='service-project',
                              role_list=['service'])
        self.app = app.setup_app()

    def test_version_documents_need_no_token(self):
        for path in ('/', '/v2', '/v2/'):
            response = request(self.app, path)
            self.assertEqual(200, response.status_int, path)
            self.assertIn('min_version', response.text)

    def test_healthcheck_needs_no_token(self):
        self.assertEqual(200, request(self.app, '/healthcheck').status_int)

    def test_other_paths_without_token_are_refused(self):
        for path in ('/v2/devices', '/devices', '/v2/nothing/here'):
            response = request(self.app, path)
            self.assertEqual(401, response.status_int, path)
            self.assertEqual('Keystone uri="http://127.0.0.1:9/identity"',
                             response.headers['WWW-Authenticate'])
            # Refused before Pecan: no microversion negotiated.
            self.assertNotIn('OpenStack-API-Version', response.headers)
            self.assertIn('X-OpenStack-Request-ID', response.headers)

    def test_cors_preflight_needs_no_token(self):
        conf.CONF.register_opts(cors.CORS_OPTS, 'cors')
        self.flags(group='cors', allowed_origin=['https://ui.example.org'])
        application = app.setup_app()
        response = request(application, '/v2/devices', method='OPTIONS',
                           headers={'Origin': 'https://ui.example.org',
                                    'Access-Control-Request-Method': 'GET'})
        self.assertEqual(200, response.status_int)
        self.assertEqual('https://ui.example.org',
                         response.headers['Access-Control-Allow-Origin'])
        # The actual request still needs its token.
        response = request(application, '/v2/devices',
                           headers={'Origin': 'https://ui.example.org'})
        self.assertEqual(401, response.status_int)
        self.assertEqual('https://ui.example.org',
                         response.headers['Access-Control-Allow-Origin'])

    def test_invalid_token_is_refused(self):
        response = request(self.app, '/v2/devices',
                           headers={'X-Auth-Token': 'not-a-token'})
        self.assertEqual(401, response.status_int)

    def test_valid_token_reaches_the_api(self):
        response = request(self.app, '/v2/nothing-here',
                           headers={'X-Auth-Token': USER_TOKEN})
        self.assertEqual(404, response.status_int)
        self.assertEqual({'faultcode': 'Client',
                          'faultstring': 'The resource could not be found.',
                          'debuginfo': None}, fault(response))
        self.assertEqual('accelerator 2.0',
                         response.headers['OpenStack-API-Version'])

    def test_context_carries_the_token_identity(self):
        request(self.app, '/v2/nothing-here',
                headers={'X-Auth-Token': USER_TOKEN})
        context = oslo_context.get_current()
        self.assertEqual('user-1', context.user_id)
        self.assertEqual('project-1', context.project_id)
        self.assertEqual(['member', 'reader'], sorted(context.roles))
        self.assertFalse(context.is_admin)
        self.assertFalse(context.has_service_token)
        self.assertTrue(context.request_id.startswith('req-'))

    def test_admin_role_makes_an_admin_context(self):
        tokens = self.useFixture(auth_fixture.AuthTokenFixture())
        tokens.add_token_data(token_id='admin-token', user_id='admin',
                              project_id='admin-project',
                              role_list=['admin'])
        request(self.app, '/v2', headers={'X-Auth-Token': 'admin-token'})
        # The version document is public: the token is not even looked at.
        self.assertFalse(oslo_context.get_current().is_admin)
        request(self.app, '/v2/devices',
                headers={'X-Auth-Token': 'admin-token'})
        self.assertTrue(oslo_context.get_current().is_admin)

    def test_service_token_with_service_role_is_recorded(self):
        request(self.app, '/v2/nothing-here',
                headers={'X-Auth-Token': USER_TOKEN,
                         'X-Service-Token': SERVICE_TOKEN})
        context = oslo_context.get_current()
        self.assertEqual('user-1', context.user_id)
        self.assertEqual(['service'], context.service_roles)
        self.assertTrue(context.has_service_token)

    def test_service_token_without_service_role_is_refused(self):
        # keystonemiddleware itself rejects it: service_token_roles_required.
        response = request(self.app, '/v2/nothing-here',
                           headers={'X-Auth-Token': USER_TOKEN,
                                    'X-Service-Token': READER_TOKEN})
        self.assertEqual(401, response.status_int)

    def test_public_paths_ignore_identity_headers_sent_by_the_caller(self):
        request(self.app, '/v2', headers={
            'X-Identity-Status': 'Confirmed', 'X-Roles': 'admin',
            'X-User-Id': 'mallory', 'X-Service-Identity-Status': 'Confirmed',
            'X-Service-Roles': 'service'})
        context = oslo_context.get_current()
        self.assertIsNone(context.user_id)
        self.assertEqual([], context.roles)
        self.assertFalse(context.is_admin)
        self.assertFalse(context.has_service_token)


class TestNoAuth(base.TestCase):
    """auth_strategy = noauth: every caller is an admin with a service token."""

    def setUp(self):
        super().setUp()
        self.flags(auth_strategy='noauth')
        policies.reset()
        self.addCleanup(policies.reset)
        self.app = app.setup_app()

    def test_requests_without_token_act_as_admin_with_service_token(self):
        response = request(self.app, '/v2/nothing-here')
        self.assertEqual(404, response.status_int)
        context = oslo_context.get_current()
        self.assertEqual(auth.NOAUTH_USER_ID, context.user_id)
        self.assertEqual(auth.NOAUTH_PROJECT_ID, context.project_id)
        self.assertEqual(['admin', 'member', 'reader', 'service'],
                         sorted(context.roles))
        self.assertTrue(context.is_admin)
        self.assertTrue(context.has_service_token)

    def test_caller_headers_choose_another_identity(self):
        request(self.app, '/v2/nothing-here', headers={
            'X-User-Id': 'user-3', 'X-Project-Id': 'project-3',
            'X-Roles': 'reader', 'X-Service-Identity-Status': 'Invalid'})
        context = oslo_context.get_current()
        self.assertEqual('user-3', context.user_id)
        self.assertEqual('project-3', context.project_id)
        self.assertEqual(['reader'], context.roles)
        self.assertFalse(context.is_admin)
        self.assertFalse(context.has_service_token)
