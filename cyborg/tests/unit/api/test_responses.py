"""JSON answers are encoded by orjson when it is installed, else by the
standard library, with the same JSON values either way."""

import datetime
import json
import sys
from unittest import mock

import webob
from oslo_utils import uuidutils

from cyborg import context as cyborg_context
from cyborg.api import responses
from cyborg.db.queries import attributes as attribute_queries
from cyborg.db.queries import deployables as deployable_queries
from cyborg.db.queries import devices as device_queries
from cyborg.tests import base
from cyborg.tests.unit.db import records
from cyborg.tests.unit.api import real_app

BODY = {
    'devices': [{
        'uuid': '0c1e8a1e-5bd7-4b2e-8a8a-6f1c6a1d2b3c',
        'hostname': 'h\u00f4te-\U0001f600',
        'std_board_info': '{"product_id": "0b30"}',
        'status_reason': None,
        'num_accelerators': 2 ** 40,
        'in_use': False,
        'attach_handle_info': {'bus': '0c', 'quote': 'a "b" \\ c\n'},
        'groups': [{}, {'resources:FPGA': '1'}],
    }],
    'next': 'http://127.0.0.1/v2/devices?limit=1&marker=x',
}


def _without_orjson():
    """A patch under which ``import orjson`` fails, as without its wheel."""
    return mock.patch.dict(sys.modules, {'orjson': None})


class _Text(str):
    pass


class TestEncoderChoice(base.TestCase):

    def test_fallback_without_the_orjson_wheel(self):
        with _without_orjson():
            name, encode = responses.select_encoder()
            self.assertEqual(responses.STDLIB, name)
            self.assertRaises(ValueError, responses.select_encoder,
                              responses.ORJSON)
        text = encode(BODY)
        # The standard library's text, byte for byte (pecan's encoder).
        self.assertEqual(json.dumps(BODY), text)
        self.assertEqual(BODY, json.loads(text))

    def test_fallback_gives_the_values_orjson_gives(self):
        name, fast = responses.select_encoder()
        self.assertEqual(responses.ORJSON, name)
        with _without_orjson():
            _, fallback = responses.select_encoder()
        self.assertEqual(json.loads(fallback(BODY)), json.loads(fast(BODY)))
        self.assertIsInstance(fast(BODY), bytes)

    def test_what_orjson_would_write_differently_goes_to_pecan(self):
        _, fast = responses.select_encoder(responses.ORJSON)
        _, fallback = responses.select_encoder(responses.STDLIB)
        for body in ({'subclass': _Text('a str subclass')},
                     {'big': 2 ** 70}, {1: 'key not text'}):
            self.assertEqual(fallback(body), fast(body))

    def test_both_write_a_datetime_as_the_timestamps_of_the_api(self):
        # A naive datetime is UTC; microseconds are cut, not rounded.
        body = {'at': datetime.datetime(2026, 1, 2, 3, 4, 5, 999999),
                'whole': datetime.datetime(2026, 1, 2, 3, 4, 5),
                'utc': datetime.datetime(2026, 1, 2, 3, 4, 5,
                                         tzinfo=datetime.UTC)}
        expected = dict.fromkeys(body, '2026-01-02T03:04:05+00:00')
        for name in (responses.ORJSON, responses.STDLIB):
            _, encode = responses.select_encoder(name)
            self.assertEqual(expected, json.loads(encode(body)), name)

    def test_embedded_text_is_its_value_with_either_encoder(self):
        self.addCleanup(responses.use_encoder, None)
        text = '{"bus":"0c","quote":"a \\"b\\" \\u00e9"}'
        for name in (responses.ORJSON, responses.STDLIB):
            responses.use_encoder(name)
            _, encode = responses.select_encoder(name)
            body = {'info': responses.embedded(text), 'n': 1}
            self.assertEqual({'info': json.loads(text), 'n': 1},
                             json.loads(encode(body)))
        # orjson writes the text as it is, unparsed.
        responses.use_encoder(responses.ORJSON)
        _, encode = responses.select_encoder(responses.ORJSON)
        self.assertIn(text.encode(), encode({'info': responses.embedded(text)}))
        # A body orjson refuses goes to pecan's encoder whole, fragment
        # and all.
        body = {'info': responses.embedded(text), 'big': 2 ** 70}
        self.assertEqual({'info': json.loads(text), 'big': 2 ** 70},
                         json.loads(encode(body)))

    def test_unknown_encoder_is_refused(self):
        self.assertRaises(ValueError, responses.select_encoder, 'ujson')


class TestAnswersWithEitherEncoder(real_app.RealAppTestCase):

    def _get(self, path):
        response = webob.Request.blank(path, headers={
            'OpenStack-API-Version': 'accelerator 2.4'}).get_response(
                self.application)
        self.assertEqual(200, response.status_int, response.text)
        self.assertEqual('application/json', response.content_type)
        return response

    def test_lists_have_the_same_values(self):
        context = cyborg_context.RequestContext()
        device = device_queries.create(context, {
            'uuid': uuidutils.generate_uuid(), 'type': 'FPGA',
            'vendor': '0x8086', 'model': 'PAC \u00e9\U0001f600',
            'hostname': 'host-\u00f4'})
        deployable, _ = deployable_queries.create(context, {
            'uuid': uuidutils.generate_uuid(), 'name': 'fpga',
            'num_accelerators': 1, 'device_id': device.id})
        attribute_queries.create(context, {
            'uuid': uuidutils.generate_uuid(),
            'deployable_id': deployable.id, 'key': 'rc',
            'value': 'FPGA "\u00e9"'})
        tree = records.DeviceTree(context, handles=1)
        profile = records.make_device_profile(
            context, groups=[{'resources:FPGA': '1',
                              'trait:CUSTOM_\u00c9': 'required'}])
        records.make_arq(
            context, profile, state='Bound', hostname='host-0',
            device_rp_uuid=uuidutils.generate_uuid(),
            instance_uuid=uuidutils.generate_uuid(), project_id='p',
            attach_handle_id=tree.attach_handles[0].id,
            deployable_id=tree.deployable.id)
        self.addCleanup(responses.use_encoder, None)
        for path in ('/v2/devices', '/v2/deployables', '/v2/attributes',
                     '/v2/accelerator_requests', '/v2/device_profiles'):
            responses.use_encoder(responses.STDLIB)
            slow = self._get(path)
            responses.use_encoder(responses.ORJSON)
            fast = self._get(path)
            self.assertEqual(slow.json_body, fast.json_body)
            # orjson writes UTF-8 as is, no spaces; the standard library
            # \u escapes with ", " and ": ".
            self.assertLess(len(fast.body), len(slow.body))
        self.assertEqual('host-\u00f4', self._get('/v2/devices').json_body[
            'devices'][0]['hostname'])
