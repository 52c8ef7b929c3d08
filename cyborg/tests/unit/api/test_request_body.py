"""Request bodies that cannot be read are refused before any work.

Each case is sent through the real WSGI application to every path that
takes a body; each must answer its 4xx in Cyborg's error format, run no
SQL statement and reach no conductor.
"""

import json
import logging

import fixtures

import webob

from cyborg.api import app
from cyborg.api.schemas import body as body_schemas
from cyborg.tests.unit.api import real_app

# Every operation taking a JSON body (no conductor runs in these tests: a
# request that got past its body would fail otherwise, not with these).
OPERATIONS = [
    ('POST', '/v2/device_profiles'),
    ('POST', '/v2/accelerator_requests'),
    ('PATCH', '/v2/accelerator_requests'),
    ('POST', '/v2/attributes'),
    ('PATCH', '/v2/devices/2b0dfcab-6812-4d5b-afe5-5bbb13cc5375'),
    ('PATCH', '/v2/deployables/2b0dfcab-6812-4d5b-afe5-5bbb13cc5375/program'),
]
JSON = 'application/json'


def nested(depth):
    return '[' * depth + ']' * depth


class RequestBodyTest(real_app.RealAppTestCase):

    def _send(self, method, path, data, content_type=JSON, headers=None):
        request = webob.Request.blank(path, method=method,
                                      headers=dict(headers or {}))
        if content_type is not None:
            request.headers['Content-Type'] = content_type
        request.body = data if isinstance(data, bytes) else data.encode()
        return request.get_response(self.application)

    def _fault(self, response):
        return json.loads(json.loads(response.text)['error_message'])

    def assertRefused(self, status, words, data, content_type=JSON,
                      headers=None):
        for method, path in OPERATIONS:
            self.statements.clear()
            response = self._send(method, path, data, content_type, headers)
            self.assertEqual(status, response.status_int,
                             '%s %s: %s' % (method, path, response.text))
            self.assertIn(words, self._fault(response)['faultstring'],
                          path)
            self.assertEqual([], self.statements, path)

    def test_deep_nesting_is_400_not_a_recursion_error(self):
        self.assertRefused(400, 'more than 32 levels deep', nested(10000))
        self.assertRefused(400, 'more than 32 levels deep', nested(33))

    def test_unknown_or_other_charset_is_400(self):
        self.assertRefused(400, 'charset "ebcdic" is not supported', '[]',
                           content_type='application/json; charset=ebcdic')
        self.assertRefused(400, 'is not supported', '[]',
                           content_type='application/json; charset=latin-1')

    def test_invalid_utf8_is_400(self):
        self.assertRefused(400, 'not valid UTF-8 (byte 2)', b'["\xff"]')

    def test_not_json_is_400(self):
        self.assertRefused(400, 'not valid JSON', '{"a": ')
        self.assertRefused(400, 'NaN is not a JSON value', '[NaN]')

    def test_empty_body_is_400(self):
        self.assertRefused(400, 'A JSON body is required', '  ')

    def test_other_media_type_is_415(self):
        self.assertRefused(415, 'must be application/json, not text/plain',
                           '[]', content_type='text/plain')
        self.assertRefused(
            415, 'application/x-www-form-urlencoded', 'a=b',
            content_type='application/x-www-form-urlencoded')

    def test_body_over_the_limit_is_413(self):
        self.flags(max_request_body_size=1024, group='api')
        self.application = app.setup_app()
        self.assertRefused(413, 'larger than 1024 bytes',
                           json.dumps(['x' * 1024]))

    def test_missing_content_type_reads_json(self):
        response = self._send('POST', '/v2/device_profiles', '{"a": ',
                              content_type=None)
        self.assertEqual(400, response.status_int)
        self.assertIn('not valid JSON', self._fault(response)['faultstring'])

    def test_a_body_within_the_limits_is_read(self):
        request = webob.Request.blank('/', method='POST')
        request.headers['Content-Type'] = 'application/json; charset=UTF-8'
        request.body = json.dumps({'groups': [{'a': nested(20)}]}).encode()
        self.assertEqual({'groups': [{'a': nested(20)}]},
                         body_schemas.json_body(request, max_size=1000))


class LoggedRequestTest(real_app.RealAppTestCase):

    def test_control_characters_from_a_url_are_escaped_in_the_log(self):
        log = self.useFixture(fixtures.FakeLogger(level=logging.INFO))
        response = webob.Request.blank(
            '/v2/devices/a%00b%0a%1b%5B31m').get_response(self.application)
        self.assertIn(response.status_int, (400, 404))
        self.assertIn('answered %d' % response.status_int, log.output)
        self.assertNotIn('\x00', log.output)
        self.assertNotIn('\x1b', log.output)
        self.assertEqual(1, log.output.count('\n'), log.output)
