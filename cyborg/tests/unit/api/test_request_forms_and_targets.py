"""Requests tools/run-fuzz.sh found answered with a 500 or against the
document, sent through the real WSGI application.

A form (``multipart/form-data`` or urlencoded) never reaches Pecan, which
would read its fields as arguments (and failed on multipart without a
boundary); a path or query string that is not UTF-8 is a 400 in Cyborg's
error body; an integer sent as ``5.0`` is an integer, as JSON Schema
says; a required query parameter is marked so in the document.
"""

import json
import logging
import re

import fixtures
import webob

from cyborg.api import openapi
from cyborg.api.schemas import declarations
from cyborg.tests import base
from cyborg.tests.unit.api import real_app

UUID = '2b0dfcab-6812-4d5b-afe5-5bbb13cc5375'
FORMS = ('multipart/form-data', 'application/x-www-form-urlencoded',
         'Multipart/Form-Data; boundary=x')


def _fault(response):
    return json.loads(json.loads(response.text)['error_message'])


class FormTest(real_app.RealAppTestCase):

    conductor_server = 'form-test'

    def _send(self, method, path, content_type, body=b''):
        request = webob.Request.blank(path, method=method)
        request.headers['Content-Type'] = content_type
        request.body = body
        return request.get_response(self.application)

    def test_an_empty_form_is_no_body(self):
        for content_type in FORMS:
            # Each answers as without a body: no 500 on a missing boundary.
            response = self._send('POST', '/v2/devices/%s/disable' % UUID,
                                  content_type)
            self.assertEqual(404, response.status_int, response.text)
            response = self._send('DELETE', '/v2/accelerator_requests',
                                  content_type)
            self.assertEqual(400, response.status_int, response.text)
            self.assertEqual('Give exactly one of arqs and instance',
                             _fault(response)['faultstring'])
            response = self._send('POST', '/v2/device_profiles',
                                  content_type)
            self.assertEqual(400, response.status_int, response.text)
            self.assertEqual('A JSON body is required',
                             _fault(response)['faultstring'])

    def test_a_form_body_is_refused_on_any_method(self):
        for method, path, body in (
                ('DELETE', '/v2/device_profiles', b'value=fpga'),
                ('GET', '/v2/devices', b'type=GPU'),
                ('POST', '/v2/devices/%s/enable' % UUID, b'a=b')):
            for content_type in FORMS:
                self.statements.clear()
                response = self._send(method, path, content_type, body)
                self.assertEqual(415, response.status_int, response.text)
                self.assertIn('must be application/json, not',
                              _fault(response)['faultstring'])
                self.assertEqual([], self.statements)


class RequestTargetTest(real_app.RealAppTestCase):

    def test_a_path_that_is_not_utf8_is_400(self):
        log = self.useFixture(fixtures.FakeLogger(level=logging.INFO))
        for path in ('/v2/devices/%FF', '/v2/%C3', '/devices/%ED%A0%80'):
            response = webob.Request.blank(path).get_response(
                self.application)
            self.assertEqual(400, response.status_int, path)
            self.assertEqual('application/json', response.content_type)
            self.assertEqual('The path is not valid UTF-8.',
                             _fault(response)['faultstring'])
        self.assertEqual([], self.statements)
        self.assertEqual(3, log.output.count('answered 400'), log.output)

    def test_a_query_string_that_is_not_utf8_is_400(self):
        response = webob.Request.blank(
            '/v2/devices?hostname=%FF').get_response(self.application)
        self.assertEqual(400, response.status_int)
        self.assertEqual('The query string is not valid UTF-8.',
                         _fault(response)['faultstring'])

    def test_a_query_integer_may_have_a_zero_fraction(self):
        for path in ('/v2/devices?limit=2.0', '/v2/attributes?'
                     'deployable_id=7.0', '/v2/deployables?root_id=1e0'):
            response = webob.Request.blank(path).get_response(
                self.application)
            self.assertEqual(200, response.status_int, response.text)
        response = webob.Request.blank(
            '/v2/devices?limit=2.5').get_response(self.application)
        self.assertEqual(400, response.status_int)

    def test_utf8_escapes_are_read(self):
        response = webob.Request.blank(
            '/v2/devices?hostname=%C3%A9').get_response(self.application)
        self.assertEqual(200, response.status_int, response.text)
        self.assertEqual({'devices': []}, response.json_body)
        response = webob.Request.blank(
            '/v2/device_profiles/%C3%A9t%C3%A9', headers={
                'OpenStack-API-Version': 'accelerator 2.2'}).get_response(
            self.application)
        self.assertEqual(404, response.status_int)
        self.assertEqual('DeviceProfile not found with name=\u00e9t\u00e9',
                         _fault(response)['faultstring'])


class IntegerTest(base.TestCase):

    def test_a_number_without_a_fraction_is_an_integer(self):
        integer = declarations.Integer(minimum=0, maximum=10)
        for value in (5.0, 5e0, 0.0):
            parsed = integer.parse('n', value)
            self.assertEqual(int(value), parsed)
            self.assertIs(int, type(parsed))

    def test_a_fraction_or_a_boolean_is_not(self):
        integer = declarations.Integer(minimum=0, maximum=10)
        for value in (5.5, True, float('inf'), float('nan'), '5'):
            self.assertRaisesRegex(Exception, 'n must be an integer',
                                   integer.parse, 'n', value)

    def test_the_range_applies_to_the_integer(self):
        integer = declarations.Integer(minimum=0, maximum=10)
        self.assertRaisesRegex(Exception, 'between 0 and 10, not 11.0',
                               integer.parse, 'n', 11.0)


class TextIntegerTest(base.TestCase):
    """A query's integer is the text of a JSON number without a fraction."""

    def setUp(self):
        super().setUp()
        self.integer = declarations.Integer(minimum=0, maximum=100,
                                            text=True)

    def test_the_text_of_an_integral_number_is_read(self):
        for text, number in (('7', 7), ('007', 7), ('7.0', 7), ('7e0', 7),
                             ('1E2', 100), ('0.00', 0)):
            self.assertEqual(number, self.integer.parse('n', text), text)

    def test_other_text_is_no_integer(self):
        for text in ('7.5', '1e-5', '+5', ' 5', '5_0', '\u0663', '7.',
                     '.5', '0x10', ''):
            self.assertRaisesRegex(Exception, 'n must be an integer',
                                   self.integer.parse, 'n', text)

    def test_a_huge_exponent_is_out_of_range_at_once(self):
        for text in ('1e999999999', '-1e999999999', '1e3'):
            self.assertRaisesRegex(Exception, 'between 0 and 100',
                                   self.integer.parse, 'n', text)


class DigitStringTest(base.TestCase):
    """An integer also taken as a string of digits: the schema of the
    string states the range too (a group id of 12 digits was valid for the
    document, a 400 for the API)."""

    def test_schema_and_check_agree_on_digit_strings(self):
        integer = declarations.Integer(minimum=0, maximum=2 ** 31 - 1,
                                       strings=True)
        pattern = integer.schema()['anyOf'][1]['pattern']
        for text in ('0', ' 7\n', '007', '2147483647', '2147483648',
                     '122406156578', '\t 122406156578\r\n', '-1', '1 2'):
            try:
                integer.parse('n', text)
                accepted = True
            except Exception:
                accepted = False
            self.assertEqual(accepted, re.search(pattern, text) is not None,
                             repr(text))


class DocumentTest(base.TestCase):

    def _parameter(self, path, method, name):
        operation = openapi.document()['paths'][path][method]
        return next(parameter for parameter in operation['parameters']
                    if parameter.get('name') == name)

    def test_the_profiles_to_delete_are_a_required_parameter(self):
        self.assertTrue(self._parameter('/v2/device_profiles', 'delete',
                                        'value')['required'])

    def test_delete_of_arqs_names_neither_parameter_required(self):
        for name in ('arqs', 'instance'):
            self.assertFalse(self._parameter(
                '/v2/accelerator_requests', 'delete', name)['required'])
