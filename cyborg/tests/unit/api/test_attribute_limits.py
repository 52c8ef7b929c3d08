"""Attribute values at the limit of the column, on every backend.

SQLite stores any length; MariaDB refuses more than its TEXT column holds
(65,535 bytes), which was a 500. The API's limit is the column's: the
longest value is stored on each backend, one byte more is a 400.
"""

import json

import webob

from cyborg import context as cyborg_context
from cyborg.api.schemas import attributes as attribute_schemas
from cyborg.tests.unit.api import real_app
from cyborg.tests.unit.db import records


class AttributeLimitsMixin:

    conductor_server = 'attribute-limits-test'

    def setUp(self):
        super().setUp()
        context = cyborg_context.get_admin_context()
        self.deployable = records.DeviceTree(context, handles=0).deployable
        self.statements.clear()

    def _post(self, value):
        request = webob.Request.blank('/v2/attributes', method='POST')
        request.content_type = 'application/json'
        request.body = json.dumps({'deployable_id': self.deployable.id,
                                   'key': 'notes', 'value': value}).encode()
        return request.get_response(self.application)

    def test_the_longest_value_is_stored(self):
        # Two bytes per character in UTF-8.
        value = 'é' * (attribute_schemas.VALUE_BYTES // 2)
        response = self._post(value)
        self.assertEqual(201, response.status_int, response.text[:300])
        self.assertEqual(value, response.json['value'])

    def test_one_byte_more_is_400_and_stores_nothing(self):
        response = self._post('x' * (attribute_schemas.VALUE_BYTES + 1))
        self.assertEqual(400, response.status_int)
        self.assertIn('value must have at most 65535 bytes in UTF-8',
                      response.text)
        self.assertEqual([], [statement for statement in self.statements
                              if statement.lstrip().upper().startswith(
                                  'INSERT')])

    def test_seventy_thousand_characters_are_400(self):
        response = self._post('v' * 70000)
        self.assertEqual(400, response.status_int, response.text[:300])


class AttributeLimitsSQLiteTest(AttributeLimitsMixin,
                                real_app.RealAppTestCase):
    backend = 'sqlite'


class AttributeLimitsMySQLTest(AttributeLimitsMixin, real_app.RealAppTestCase):
    backend = 'mysql'


class AttributeLimitsPostgreSQLTest(AttributeLimitsMixin,
                                    real_app.RealAppTestCase):
    backend = 'postgresql'
