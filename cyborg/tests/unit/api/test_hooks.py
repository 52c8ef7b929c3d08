"""The hooks on a small Pecan app whose controllers raise on purpose.

The real application has no controller that raises a CyborgException yet;
this app has one per kind of error, behind the real hooks and middleware.
"""

import json
import logging
import sys

import fixtures
import pecan
import webob
from oslo_messaging._drivers import common as messaging_common
from oslo_middleware import request_id
from wsmeext import pecan as wsme_pecan

from cyborg.api import hooks
from cyborg.api import microversions
from cyborg import conf
from cyborg import exception
from cyborg import policies
from cyborg import rpc
from cyborg.tests import base


class Boom(Exception):
    """An error no layer expected."""


class RaisingController:
    """GET /v2/<name> raises the error of that name."""

    @pecan.expose('json')
    def not_found(self):
        raise exception.ResourceNotFound(resource='Device', key='uuid',
                                         value='1234')

    @pecan.expose('json')
    def forbidden(self):
        raise exception.PolicyNotAuthorized(action='cyborg:device:get_all')

    @pecan.expose('json')
    def unavailable(self):
        raise exception.ServiceUnavailable(reason='no conductor answered')

    @pecan.expose('json')
    def database(self):
        raise exception.DatabaseUnavailable(reason='OperationalError 2003')

    @pecan.expose('json')
    def remote_database(self):
        # The conductor found the database unreachable.
        try:
            raise exception.DatabaseUnavailable(reason='OperationalError 2013')
        except exception.DatabaseUnavailable:
            failure = messaging_common.serialize_remote_exception(
                sys.exc_info())
        raise messaging_common.deserialize_remote_exception(
            failure, rpc.ALLOWED_EXMODS)

    @pecan.expose('json')
    def remote(self):
        # As oslo.messaging re-raises a conductor's exception in the API.
        try:
            raise exception.DuplicateName(resource='Device profile',
                                          name='gpu')
        except exception.DuplicateName:
            failure = messaging_common.serialize_remote_exception(
                sys.exc_info())
        raise messaging_common.deserialize_remote_exception(
            failure, rpc.ALLOWED_EXMODS)

    @pecan.expose('json')
    def unexpected(self):
        raise Boom('secret internal detail')

    @pecan.expose('json')
    def version(self):
        request = pecan.request
        return {'version': str(request.version),
                'device_status': microversions.supports_device_status(
                    request.version)}

    @pecan.expose('json')
    def varying(self):
        pecan.response.headers['Vary'] = 'Accept'
        return {}

    @pecan.expose('json')
    def conductor(self):
        return {'conductor': type(pecan.request.conductor).__name__}

    @pecan.expose('json')
    def settings(self):
        request = pecan.request
        return {'base_url': request.base_url,
                'max_limit': request.max_limit}


class WSMEController:
    """The same errors through WSME's wsexpose, which catches them itself."""

    @wsme_pecan.wsexpose(None)
    def not_found(self):
        raise exception.ResourceNotFound(resource='Deployable', key='uuid',
                                         value='5678')

    @wsme_pecan.wsexpose(None)
    def remote(self):
        return RaisingController().remote()


class Root:
    v2 = RaisingController()
    wsme = WSMEController()


def make_app():
    """The raising controllers behind cyborg's hooks and the request id."""
    return request_id.RequestId(pecan.make_app(
        Root(), hooks=hooks.all_hooks(conf.CONF), force_canonical=False,
        guess_content_type_from_ext=False))


class HooksTestCase(base.TestCase):
    """The policy enforcer a real application initialises, then make_app()."""

    def setUp(self):
        super().setUp()
        policies.init(conf.CONF)
        self.addCleanup(policies.reset)


class TestErrorHook(HooksTestCase):

    def setUp(self):
        super().setUp()
        self.log = self.useFixture(fixtures.FakeLogger(
            name='cyborg.api.hooks', level=logging.DEBUG))
        self.app = make_app()

    def _get(self, path, headers=None):
        return webob.Request.blank(path, headers=headers or {}).get_response(
            self.app)

    def _fault(self, response):
        self.assertEqual('application/json', response.content_type)
        body = response.json_body
        self.assertEqual(['error_message'], list(body))
        self.assertIsInstance(body['error_message'], str)
        return json.loads(body['error_message'])

    def test_cyborg_exception_gives_its_code_and_message(self):
        response = self._get('/v2/not_found')
        self.assertEqual(404, response.status_int)
        self.assertEqual({'faultcode': 'Client',
                          'faultstring': 'Device not found with uuid=1234',
                          'debuginfo': None}, self._fault(response))

    def test_policy_refusal_is_403_in_the_error_body(self):
        response = self._get('/v2/forbidden')
        self.assertEqual(403, response.status_int)
        self.assertEqual(
            'Policy does not allow cyborg:device:get_all to be performed.',
            self._fault(response)['faultstring'])

    def test_server_side_cyborg_exception_is_a_server_fault(self):
        response = self._get('/v2/unavailable')
        self.assertEqual(503, response.status_int)
        fault = self._fault(response)
        self.assertEqual('Server', fault['faultcode'])
        self.assertEqual('Service unavailable: no conductor answered',
                         fault['faultstring'])

    def test_unreachable_database_is_503_with_retry_after(self):
        response = self._get('/v2/database')
        self.assertEqual(503, response.status_int)
        self.assertEqual(str(conf.CONF.api.retry_after),
                         response.headers['Retry-After'])
        self.assertEqual(
            {'faultcode': 'Server',
             'faultstring': 'The database is unavailable: '
                            'OperationalError 2003',
             'debuginfo': None}, self._fault(response))

    def test_unreachable_database_in_the_conductor_is_503_too(self):
        response = self._get('/v2/remote_database')
        self.assertEqual(503, response.status_int)
        self.assertIn('Retry-After', response.headers)
        self.assertEqual('The database is unavailable: OperationalError '
                         '2013', self._fault(response)['faultstring'])
        self.assertNotIn('Traceback', response.text)

    def test_unreachable_database_is_one_warning_without_traceback(self):
        log = self.useFixture(fixtures.FakeLogger(
            name='cyborg.api.hooks', level=logging.DEBUG,
            format='%(levelname)s %(message)s'))
        response = self._get('/v2/remote_database')
        request_id_value = response.headers['X-OpenStack-Request-ID']
        lines = log.output.splitlines()
        self.assertEqual(1, len(lines), log.output)
        self.assertIn(request_id_value, lines[0])
        self.assertTrue(lines[0].startswith(
            'WARNING GET /v2/remote_database answered 503'), lines[0])
        self.assertNotIn('Traceback', log.output)

    def test_client_errors_have_no_retry_after(self):
        self.assertNotIn('Retry-After',
                         self._get('/v2/not_found').headers)

    def test_exception_from_the_conductor_hides_the_remote_traceback(self):
        response = self._get('/v2/remote')
        self.assertEqual(409, response.status_int)
        self.assertEqual({'faultcode': 'Client',
                          'faultstring': 'Device profile with name gpu '
                                         'already exists.',
                          'debuginfo': None}, self._fault(response))
        self.assertNotIn('Traceback', response.text)

    def test_wsme_faults_come_out_in_the_error_body(self):
        response = self._get('/wsme/not_found')
        self.assertEqual(404, response.status_int)
        self.assertEqual({'faultcode': 'Client',
                          'faultstring': 'Deployable not found with '
                                         'uuid=5678',
                          'debuginfo': None}, self._fault(response))

    def test_wsme_faults_hide_the_remote_traceback(self):
        response = self._get('/wsme/remote')
        self.assertEqual(409, response.status_int)
        self.assertEqual('Device profile with name gpu already exists.',
                         self._fault(response)['faultstring'])
        self.assertNotIn('Traceback', response.text)

    def test_unexpected_exception_is_a_generic_500(self):
        response = self._get('/v2/unexpected')
        self.assertEqual(500, response.status_int)
        self.assertEqual({'faultcode': 'Server',
                          'faultstring': hooks.GENERIC_SERVER_ERROR,
                          'debuginfo': None}, self._fault(response))
        self.assertNotIn('secret', response.text)

    def test_unexpected_exception_is_logged_once_with_traceback_and_id(self):
        response = self._get('/v2/unexpected')
        request_id_value = response.headers['X-OpenStack-Request-ID']
        self.assertEqual(1, self.log.output.count(request_id_value))
        self.assertEqual(1, self.log.output.count('Traceback'))
        self.assertIn('secret internal detail', self.log.output)
        self.assertIn('GET /v2/unexpected answered 500', self.log.output)

    def test_known_server_failure_is_logged_once_without_traceback(self):
        response = self._get('/v2/unavailable')
        request_id_value = response.headers['X-OpenStack-Request-ID']
        self.assertEqual(1, self.log.output.count(request_id_value))
        self.assertNotIn('Traceback', self.log.output)
        self.assertIn('GET /v2/unavailable answered 503: Service unavailable',
                      self.log.output)

    def test_client_error_is_logged_once_without_traceback(self):
        response = self._get('/v2/not_found')
        request_id_value = response.headers['X-OpenStack-Request-ID']
        self.assertEqual(1, self.log.output.count(request_id_value))
        self.assertNotIn('Traceback', self.log.output)
        self.assertIn('GET /v2/not_found answered 404: Device not found',
                      self.log.output)

    def test_printable_escapes_control_characters(self):
        self.assertEqual('a\\x00b\\x0a\\x1b[31m\\u2028 \u00e9',
                         hooks.printable('a\x00b\n\x1b[31m\u2028 \u00e9'))

    def test_errors_keep_the_version_headers(self):
        response = self._get('/v2/not_found', headers={
            'OpenStack-API-Version': 'accelerator 2.1'})
        self.assertEqual('accelerator 2.1',
                         response.headers['OpenStack-API-Version'])
        self.assertEqual('OpenStack-API-Version', response.headers['Vary'])


class TestMicroversionAndConductorHooks(HooksTestCase):

    def setUp(self):
        super().setUp()
        self.app = make_app()

    def _get(self, path, headers=None):
        return webob.Request.blank(path, headers=headers or {}).get_response(
            self.app)

    def test_negotiated_version_is_on_the_request(self):
        response = self._get('/v2/version', headers={
            'OpenStack-API-Version': 'accelerator 2.3'})
        self.assertEqual({'version': '2.3', 'device_status': True},
                         response.json_body)
        response = self._get('/v2/version')
        self.assertEqual({'version': '2.0', 'device_status': False},
                         response.json_body)

    def test_vary_set_by_the_controller_is_kept(self):
        response = self._get('/v2/varying')
        self.assertEqual('Accept, OpenStack-API-Version',
                         response.headers['Vary'])

    def test_conductor_client_is_on_the_request(self):
        response = self._get('/v2/conductor')
        self.assertEqual({'conductor': 'ConductorAPI'}, response.json_body)


class TestConductorHook(HooksTestCase):

    def test_program_calls_wait_for_the_configured_program_timeout(self):
        self.flags(group='conductor', program_timeout=1234)
        conductor_hook = next(hook for hook in hooks.all_hooks(conf.CONF)
                              if isinstance(hook, hooks.ConductorHook))
        client = conductor_hook._conductor_api()
        self.assertEqual(1234, client._program_timeout)


class TestSettingsHook(HooksTestCase):
    """base_url and max_limit come from the configuration the app was built with."""

    def _settings(self, **environ):
        request = webob.Request.blank('/v2/settings', environ=environ,
                                      base_url='http://api.example.org:8080')
        return request.get_response(make_app()).json_body

    def test_base_url_is_the_request_url_with_its_mount_prefix(self):
        self.flags(group='api', max_limit=7)
        self.assertEqual({'base_url': 'http://api.example.org:8080',
                          'max_limit': 7}, self._settings())
        self.assertEqual('http://api.example.org:8080/accelerator',
                         self._settings(SCRIPT_NAME='/accelerator')[
                             'base_url'])

    def test_public_endpoint_wins_without_its_trailing_slash(self):
        self.flags(group='api',
                   public_endpoint='https://cyborg.example.org/accel/')
        self.assertEqual('https://cyborg.example.org/accel',
                         self._settings(SCRIPT_NAME='/accelerator')[
                             'base_url'])

