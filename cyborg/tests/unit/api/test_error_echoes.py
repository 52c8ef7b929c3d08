"""What a 4xx says back, through the real WSGI application, on every backend.

An error echoes the input it refuses (a name, a query value, a path
segment); a long one comes back cut to its start, an ellipsis, its end and
its length, in the body and in the log line, whichever route refused it.
A 406 for the Accept header says what was asked for and what the API
answers in.
"""

import json
import logging

import fixtures
import webob
from oslo_serialization import jsonutils

from cyborg.api import hooks
from cyborg import context as cyborg_context
from cyborg import objects
from cyborg.tests import base
from cyborg.tests.unit.api import real_app

LONG = 10000
# What is left of a long echo: 60 + 1 + 8 characters, its length, quotes.
MAX_CUT_ECHO = 100


def faultstring(response):
    return json.loads(response.json_body['error_message'])['faultstring']


class TestErrorEchoes(real_app.RealAppTestCase):

    conductor_server = 'error-echoes-test'

    def setUp(self):
        super().setUp()
        self.log = self.useFixture(fixtures.FakeLogger(
            level=logging.INFO, format='%(name)s %(levelname)s %(message)s'))

    def _request(self, method, path, body=None, **headers):
        headers.setdefault('OpenStack-API-Version', 'accelerator 2.3')
        request = webob.Request.blank(path, method=method, headers=headers)
        if body is not None:
            request.content_type = 'application/json'
            request.body = jsonutils.dump_as_bytes(body)
        return request.get_response(self.application)

    def assertCut(self, response, status, start, echo, length=LONG):
        """``response`` is a ``status`` error whose message starts with
        ``start`` and echoes ``echo`` (a character repeated) cut, naming
        ``length``; the log line is cut alike."""
        self.assertEqual(status, response.status_int, response.text[:300])
        message = faultstring(response)
        self.assertTrue(message.startswith(start), message)
        self.assertRegex(message, "%s{59,60}\u2026%s{7,8}'? \\(%d characters\\)"
                         % (echo, echo, length))
        self.assertLess(len(message), len(start) + MAX_CUT_ECHO, message)
        self.assertLess(len(response.body), 400)
        logged = [line for line in self.log.output.splitlines()
                  if line.startswith('cyborg.api.hooks INFO')]
        self.assertEqual(1, len(logged), self.log.output[:2000])
        self.assertIn('answered %d: %s' % (status, start), logged[0])
        self.assertIn('(%d characters)' % length, logged[0])
        self.assertLess(len(logged[0]), 600)

    def test_a_long_name_in_a_device_profile_create(self):
        response = self._request('POST', '/v2/device_profiles', [
            {'name': 'x' * LONG, 'groups': [{'resources:FPGA': '1'}]}])

        self.assertCut(response, 400, "name must be 1 to 255 letters, "
                       "digits, - and _, not 'x", 'x')
        self.assertEqual([], objects.DeviceProfile.list(
            cyborg_context.get_admin_context()))

    def test_a_long_query_parameter_value(self):
        response = self._request(
            'GET', '/v2/accelerator_requests?instance=' + 'b' * LONG)
        self.assertCut(response, 400, "instance must be a UUID, not 'b",
                       'b')

    def test_a_long_query_parameter_name(self):
        response = self._request('GET', '/v2/device_profiles?%s=1'
                                 % ('d' * LONG))
        self.assertCut(response, 400, 'Unknown query parameter d', 'd')

    def test_a_long_uuid_in_a_path(self):
        response = self._request('GET', '/v2/accelerator_requests/'
                                 + 'a' * LONG)
        self.assertCut(response, 404, 'ARQ not found with uuid=a', 'a')

    def test_a_long_name_in_a_path(self):
        response = self._request('DELETE', '/v2/device_profiles/'
                                 + 'k' * LONG)
        self.assertCut(response, 404,
                       'DeviceProfile not found with name=k', 'k')

    def test_a_long_profile_name_of_an_arq_create(self):
        response = self._request('POST', '/v2/accelerator_requests', {
            'device_profile_name': 'f' * LONG})
        self.assertCut(response, 404,
                       'DeviceProfile not found with name=f', 'f')

    def test_short_echoes_are_whole(self):
        response = self._request(
            'GET', '/v2/accelerator_requests?instance=' + 'b' * 100)

        self.assertEqual(400, response.status_int)
        self.assertEqual("instance must be a UUID, not '%s'" % ('b' * 100),
                         faultstring(response))


class TestErrorEchoesMySQL(TestErrorEchoes):

    backend = 'mysql'


class TestErrorEchoesPostgreSQL(TestErrorEchoes):

    backend = 'postgresql'


class TestNotAcceptable(real_app.RealAppTestCase):
    """No database is asked: one backend is enough."""

    def setUp(self):
        super().setUp()
        self.log = self.useFixture(fixtures.FakeLogger(
            level=logging.INFO, format='%(name)s %(levelname)s %(message)s'))

    def _get(self, path, accept):
        return webob.Request.blank(path, headers={'Accept': accept}) \
            .get_response(self.application)

    def test_an_accept_the_api_does_not_serve(self):
        for path in ('/v2/device_profiles', '/v2', '/',
                     '/v2/accelerator_requests'):
            response = self._get(path, 'application/xml')

            self.assertEqual(406, response.status_int, path)
            self.assertEqual(
                "Not acceptable: the Accept header asks for "
                "'application/xml', but this API answers in application/json "
                "(and GET /v2/fleet in text/html too).",
                faultstring(response))
        self.assertEqual([], self.statements)

    def test_an_accept_the_fleet_page_does_not_serve(self):
        response = self._get('/v2/fleet', 'image/png')

        self.assertEqual(406, response.status_int)
        self.assertEqual(
            "Not acceptable: the Accept header asks for 'image/png', but "
            "/v2/fleet answers in application/json or text/html.",
            faultstring(response))

    def test_logged_once_as_the_answer_not_as_a_server_error(self):
        self._get('/v2/device_profiles', 'application/xml')

        lines = self.log.output.splitlines()
        self.assertEqual([], [line for line in lines if ' ERROR ' in line])
        self.assertEqual(1, len([line for line in lines
                                 if 'answered 406' in line]), lines)

    def test_a_long_accept_header_is_cut(self):
        response = self._get('/v2/device_profiles',
                             'application/' + 'z' * LONG)

        self.assertEqual(406, response.status_int)
        message = faultstring(response)
        self.assertIn('(%d characters)' % (LONG + len('application/')),
                      message)
        self.assertLess(len(message), 250)


class TestBounded(base.TestCase):

    def test_a_quoted_value_keeps_its_quotes_and_punctuation(self):
        self.assertEqual(
            "not '%s\u2026%s' (300 characters)." % ('x' * 59, 'x' * 7),
            hooks.bounded("not '%s'." % ('x' * 300)))

    def test_a_quoted_value_with_spaces(self):
        message = hooks.bounded("name must be a name, not '%s', sorry"
                                % ('a b ' * 100))
        self.assertEqual(
            "name must be a name, not '%s\u2026%s' (400 characters), sorry"
            % (('a b ' * 15)[:59], ('a b ' * 2)[-7:]), message)

    def test_a_bare_run_and_a_name_equal_value(self):
        self.assertEqual(
            'found with name=%s\u2026%s (200 characters); try again'
            % ('n' * 60, 'n' * 8),
            hooks.bounded('found with name=%s; try again' % ('n' * 200)))

    def test_an_apostrophe_is_no_quote(self):
        message = ("Its board 'u250' is not the device's board ('%s'). "
                   "It is a partial bitstream needing shell %s, but no shell "
                   "is loaded." % ('p' * 20, '0b0a5c1e-3f4e-4c2a-9a55-'
                                   '6f1c2d7e8a90') + ' More words.' * 10)
        self.assertEqual(message, hooks.bounded(message))

    def test_messages_within_the_bounds_are_left_alone(self):
        for message in ('x' * hooks.MAX_ECHO, "'%s'" % ('y' * 120),
                        "not '%s'." % ('y y ' * 30), 'word ' * 399):
            self.assertEqual(message, hooks.bounded(message))

    def test_a_message_of_many_short_words_is_cut_as_a_whole(self):
        message = hooks.bounded('a ' * 5000)
        self.assertEqual('a ' * 1000 + '\u2026 (10000 characters)', message)

    def test_5xx_bodies_are_not_cut(self):
        detail = 'Placement answered 500: ' + 'q' * 300
        response = hooks.error_response(503, detail)
        self.assertEqual(detail, json.loads(
            response.json_body['error_message'])['faultstring'])
        response = hooks.error_response(400, detail)
        self.assertIn('(300 characters)', json.loads(
            response.json_body['error_message'])['faultstring'])
