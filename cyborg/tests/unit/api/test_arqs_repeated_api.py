"""A bind PATCH sent again, through the real WSGI application and the
conductor (local RPC dispatch), on every backend.

The retry of a bind whose answer was lost is answered 202 as the first
would have been, and binds nothing twice; a different binding of the same
ARQs is still 409. The API itself tells a lost answer (the bind is
recorded: 202) from a lost request (sent once more); only when the repeat
is lost too does it answer 503 "whether the request was carried out is
unknown".
"""

import fixtures
import webob
from oslo_serialization import jsonutils
from oslo_utils import uuidutils

from cyborg import context as cyborg_context
from cyborg import objects
from cyborg import rpc
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.tests.unit.api import real_app
from cyborg.tests.unit.conductor import recording_binder
from cyborg.tests.unit.db import records


class TestRepeatedBindAPI(real_app.RealAppTestCase):

    conductor_server = 'arq-repeat-test'

    def setUp(self):
        super().setUp()
        self.context = cyborg_context.get_admin_context()
        self.binder = self.conductor.binder = recording_binder.RecordingBinder()
        records.make_device_profile(self.context, name='dp-2',
                                    groups=[{'resources:FPGA': '2'}])
        self.uuids = [arq['uuid'] for arq in self._request(
            'POST', '/v2/accelerator_requests',
            {'device_profile_name': 'dp-2'}, 201).json_body['arqs']]
        self.instance = uuidutils.generate_uuid()
        self.rp_uuid = uuidutils.generate_uuid()

    def _request(self, method, path, body=None, status=200):
        request = webob.Request.blank(path, method=method,
                                      headers={'Accept': 'application/json'})
        if body is not None:
            request.content_type = 'application/json'
            request.body = jsonutils.dump_as_bytes(body)
        response = request.get_response(self.application)
        self.assertEqual(status, response.status_int, response.text)
        return response

    def _bind(self, status, hostname='compute-1', instance=None):
        body = {uuid: [
            {'path': '/hostname', 'op': 'add', 'value': hostname},
            {'path': '/device_rp_uuid', 'op': 'add', 'value': self.rp_uuid},
            {'path': '/instance_uuid', 'op': 'add',
             'value': instance or self.instance}]
            for uuid in self.uuids}
        return self._request('PATCH', '/v2/accelerator_requests', body,
                             status)

    def _arqs(self):
        return sorted((arq.uuid, arq.state, arq.hostname, arq.instance_uuid)
                      for arq in objects.ARQ.list(
                          self.context, filters={'uuid': self.uuids}))

    def test_the_same_bind_twice_is_202_twice_and_binds_once(self):
        self._bind(202)
        recorded = self._arqs()
        self._bind(202)
        self.assertEqual(recorded, self._arqs())
        self.assertEqual([sorted(self.uuids)], self.binder.submitted)
        self.assertEqual({'BindStarted'}, {row[1] for row in recorded})

    def test_another_binding_is_still_409(self):
        self._bind(202)
        recorded = self._arqs()
        response = self._bind(409, hostname='compute-2')
        self.assertIn('in state BindStarted', response.text)
        self._bind(409, instance=uuidutils.generate_uuid())
        self.assertEqual(recorded, self._arqs())
        self.assertEqual(1, len(self.binder.submitted))

    def _lose(self, record):
        """Make the conductor's bind_arqs lose its answers: ``record`` says,
        for each call in turn, whether the conductor records the bind
        before the answer is lost (True), or the request itself is lost
        (False); calls past the list are answered. Returns the calls made."""
        bind_arqs = conductor_rpcapi.ConductorAPI.bind_arqs
        calls = []

        def lossy(api, context, bindings):
            calls.append(sorted(bindings))
            if len(calls) > len(record):
                return bind_arqs(api, context, bindings)
            if record[len(calls) - 1]:
                bind_arqs(api, context, bindings)
            raise rpc.MessagingTimeout(topic=conductor_rpcapi.TOPIC)

        self.useFixture(fixtures.MonkeyPatch(
            'cyborg.conductor.rpcapi.ConductorAPI.bind_arqs', lossy))
        return calls

    def test_a_lost_answer_of_a_recorded_bind_is_202(self):
        # The conductor records the bind, its answer never arrives: the
        # database says it was carried out, so the API answers as the
        # conductor would have, without asking again.
        calls = self._lose([True])
        self._bind(202)
        self.assertEqual(1, len(calls))
        recorded = self._arqs()
        self.assertEqual({'BindStarted'}, {row[1] for row in recorded})
        self.assertEqual([sorted(self.uuids)], self.binder.submitted)
        # The client's own retry is 202 too, and binds nothing twice.
        self._bind(202)
        self.assertEqual(recorded, self._arqs())
        self.assertEqual([sorted(self.uuids)], self.binder.submitted)

    def test_a_lost_request_is_sent_again(self):
        calls = self._lose([False])
        self._bind(202)
        self.assertEqual(2, len(calls))
        self.assertEqual({'BindStarted'}, {row[1] for row in self._arqs()})
        self.assertEqual([sorted(self.uuids)], self.binder.submitted)

    def test_a_repeat_lost_too_is_503_unknown(self):
        calls = self._lose([False, False])
        response = self._bind(503)
        self.assertIn('whether the request was carried out is unknown',
                      response.text)
        self.assertIsNotNone(response.headers.get('Retry-After'))
        self.assertEqual(2, len(calls))
        self.assertEqual({'Initial'}, {row[1] for row in self._arqs()})
        self.assertEqual([], self.binder.submitted)

    def test_another_binding_after_a_lost_request_is_409(self):
        # Not recorded, sent again: the conductor's refusal is the answer.
        self._bind(202)
        calls = self._lose([False])
        self._bind(409, hostname='compute-2')
        self.assertEqual(2, len(calls))
        self.assertEqual(1, len(self.binder.submitted))


class TestRepeatedBindAPIMySQL(TestRepeatedBindAPI):

    backend = 'mysql'


class TestRepeatedBindAPIPostgreSQL(TestRepeatedBindAPI):

    backend = 'postgresql'
