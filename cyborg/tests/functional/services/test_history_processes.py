"""Who bound and unbound, in the history, end to end (issue 32, point 5).

cyborg-api, -conductor and -agent run as separate processes over RabbitMQ
and MariaDB, with a real Placement. A bind is asked through the API as a
user of a project; the conductor records it and a binder thread ends it
later, yet the bind entry of the region's and of its card's history names
that user, project and the request id the API answered the PATCH with
(``x-openstack-request-id``), not the conductor. The unbind entry names
the unbind's caller and request. From 2.6 the ARQ is listed by its card
and by its region while it holds a handle there, and no more once
unbound.
"""

import http.client
import json
import uuid

from cyborg.tests import base
from cyborg.tests.functional.services import test_arq_processes as cases

FLEET = {'fpgas': [cases.FPGA_A, cases.FPGA_B], 'gpus': [cases.T4_GPU]}
VERSION = {'OpenStack-API-Version': 'accelerator 2.6'}
NOVA = {'X-User-Id': 'nova-user-%s' % uuid.uuid4().hex[:6],
        'X-Project-Id': 'service-project'}
OPERATOR = {'X-User-Id': 'operator-%s' % uuid.uuid4().hex[:6],
            'X-Project-Id': 'admin-project'}


class HistoryProcessesTest(cases.ArqProcessesMixin, base.TestCase):

    backend = 'mysql'

    def _send(self, method, path, body=None, headers=None):
        """(status, decoded body, request id answered) of one request."""
        sent = dict(VERSION, Accept='application/json', **(headers or {}))
        data = None
        if body is not None:
            sent['Content-Type'] = 'application/json'
            data = json.dumps(body)
        connection = http.client.HTTPConnection('127.0.0.1', self.api_port,
                                                timeout=60)
        try:
            connection.request(method, path, body=data, headers=sent)
            response = connection.getresponse()
            raw = response.read()
        finally:
            connection.close()
        return (response.status, json.loads(raw) if raw else None,
                response.getheader('x-openstack-request-id'))

    def _get(self, path):
        status, body, _ = self._send('GET', path)
        self.assertEqual(200, status, '%s: %s\n%s' % (path, body,
                                                      self._logs()))
        return body

    def _entries(self, collection, uuid_, arq_uuid):
        """The history entries of ``arq_uuid`` in a device's or a
        deployable's history, newest first, as (event, outcome, user,
        project, request id)."""
        history = self._get('/v2/%s/%s/history' % (collection, uuid_))
        return [(entry['event'], entry['outcome'], entry['user_id'],
                 entry['project_id'], entry['request_id'])
                for entry in history['history']
                if entry['arq_uuid'] == arq_uuid]

    def _listed_by(self, name, value):
        return [arq['uuid'] for arq in self._get(
            '/v2/accelerator_requests?%s=%s' % (name, value))['arqs']]

    def test_the_bind_entry_names_who_asked_for_the_bind(self):
        deployables = self._start_services(FLEET, None)
        region = deployables[cases.REGION_A]
        profile = self._create_profile('history-%s' % self.suffix,
                                       cases.region_trait(cases.REGION_A_ID))
        arq_uuid = self._create_arq(profile['name'])['uuid']
        instance_uuid = str(uuid.uuid4())

        status, body, bind_request = self._send(
            'PATCH', '/v2/accelerator_requests',
            {arq_uuid: cases.bind_ops(self.host, region['rp_uuid'],
                                      instance_uuid)}, headers=NOVA)
        self.assertEqual(202, status, body)
        self.assertTrue(bind_request.startswith('req-'), bind_request)
        [bound] = self._resolved(instance_uuid)
        self.assertEqual('Bound', bound['state'], bound)

        bind_entry = ('bind', 'ok', NOVA['X-User-Id'],
                      NOVA['X-Project-Id'], bind_request)
        self.assertEqual([bind_entry], self._entries(
            'deployables', region['uuid'], arq_uuid))
        history = self._get('/v2/deployables/%s/history' % region['uuid'])
        device_uuid = history['history'][0]['device_uuid']
        self.assertEqual([bind_entry], self._entries(
            'devices', device_uuid, arq_uuid))
        # Which instances lose their accelerator if this card goes.
        self.assertEqual([arq_uuid], self._listed_by('device_uuid',
                                                     device_uuid))
        self.assertEqual([arq_uuid], self._listed_by('deployable_uuid',
                                                     region['uuid']))

        status, body, unbind_request = self._send(
            'PATCH', '/v2/accelerator_requests',
            {arq_uuid: cases.UNBIND_OPS}, headers=OPERATOR)
        self.assertEqual(202, status, body)
        self.assertNotEqual(bind_request, unbind_request)
        self.assertEqual(
            [('unbind', 'ok', OPERATOR['X-User-Id'],
              OPERATOR['X-Project-Id'], unbind_request), bind_entry],
            self._entries('devices', device_uuid, arq_uuid))
        self.assertEqual([], self._listed_by('device_uuid', device_uuid))
        self._assert_clean_stop(self.services)
