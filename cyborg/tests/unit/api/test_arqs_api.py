"""/v2/accelerator_requests through the real WSGI application, on every backend.

Every request costs the same number of SQL statements (API reads and the
conductor's transaction together: the conductor is reached by local RPC
dispatch in this process) for 1 ARQ as for 50: create, list (by instance,
with bind_state=resolved), bind, unbind, delete by uuids and by instance.
"""

import fixtures
import webob
from oslo_serialization import jsonutils
from oslo_utils import uuidutils

from cyborg import context as cyborg_context
from cyborg import objects
from cyborg.db.queries import arqs as arq_queries
from cyborg.tests.unit.api import real_app
from cyborg.tests.unit.conductor import recording_binder
from cyborg.tests.unit.db import records

SMALL = 1
LARGE = 50


class TestARQAPIStatementCounts(real_app.RealAppTestCase):

    conductor_server = 'arq-api-test'

    def setUp(self):
        super().setUp()
        self.context = cyborg_context.get_admin_context()
        self.binder = self.conductor.binder = recording_binder.RecordingBinder()
        for count in (SMALL, LARGE):
            records.make_device_profile(
                self.context, name='dp-%d' % count,
                groups=[{'resources:FPGA': str(count)}])

    def _request(self, method, path, body=None, status=200):
        """(statements, response) of one request answering ``status``."""
        request = webob.Request.blank(path, method=method,
                                      headers={'Accept': 'application/json'})
        if body is not None:
            request.content_type = 'application/json'
            request.body = jsonutils.dump_as_bytes(body)
        self.statements = []
        response = request.get_response(self.application)
        self.assertEqual(status, response.status_int, response.text)
        return len(self.statements), response

    def _create(self, count):
        statements, response = self._request(
            'POST', '/v2/accelerator_requests',
            {'device_profile_name': 'dp-%d' % count}, status=201)
        uuids = [arq['uuid'] for arq in response.json_body['arqs']]
        self.assertEqual(count, len(uuids))
        return statements, uuids

    def _bind(self, uuids, instance):
        rp_uuid = uuidutils.generate_uuid()
        body = {uuid: [
            {'path': '/hostname', 'op': 'add', 'value': 'compute-1'},
            {'path': '/device_rp_uuid', 'op': 'add', 'value': rp_uuid},
            {'path': '/instance_uuid', 'op': 'add', 'value': instance}]
            for uuid in uuids}
        return self._request('PATCH', '/v2/accelerator_requests', body,
                             status=202)[0]

    def _unbind(self, uuids):
        body = {uuid: [{'path': path, 'op': 'remove'}
                       for path in ('/hostname', '/device_rp_uuid',
                                    '/instance_uuid')] for uuid in uuids}
        return self._request('PATCH', '/v2/accelerator_requests', body,
                             status=202)[0]

    def _states(self, uuids):
        states = {arq.uuid: arq.state for arq in objects.ARQ.list(
            self.context, filters={'uuid': uuids})}
        return [states.get(uuid) for uuid in uuids]

    def _assert_same(self, counts, at_most):
        self.assertEqual(counts[SMALL], counts[LARGE],
                         '%d statements for %d ARQs, %d for %d'
                         % (counts[SMALL], SMALL, counts[LARGE], LARGE))
        self.assertLessEqual(counts[LARGE], at_most)

    def test_create(self):
        counts = {count: self._create(count)[0] for count in (SMALL, LARGE)}
        self._assert_same(counts, 4)

    def test_bind_then_list_of_the_instance(self):
        bind_counts, list_counts, locked_counts = {}, {}, {}
        for count in (SMALL, LARGE):
            uuids = self._create(count)[1]
            instance = uuidutils.generate_uuid()
            bind_counts[count] = self._bind(uuids, instance)
            self.assertEqual(['BindStarted'] * count, self._states(uuids))
            self.assertEqual(sorted(uuids), self.binder.submitted[-1])
            list_counts[count], response = self._request(
                'GET', '/v2/accelerator_requests?instance=%s' % instance)
            self.assertEqual(sorted(uuids), sorted(
                arq['uuid'] for arq in response.json_body['arqs']))
            locked_counts[count], _ = self._request(
                'GET', '/v2/accelerator_requests?instance=%s'
                '&bind_state=resolved' % instance, status=423)
        self.assertEqual(2, len(self.binder.submitted))
        self._assert_same(bind_counts, 4)
        self._assert_same(list_counts, 1)
        self._assert_same(locked_counts, 1)

    def test_resolved_list(self):
        counts = {}
        for count in (SMALL, LARGE):
            uuids = self._create(count)[1]
            instance = uuidutils.generate_uuid()
            self._bind(uuids, instance)
            for arq in objects.ARQ.list(self.context,
                                           filters={'uuid': uuids}):
                arq.state = 'Bound'
                arq.save(self.context)
            counts[count], response = self._request(
                'GET', '/v2/accelerator_requests?instance=%s'
                '&bind_state=resolved' % instance)
            self.assertEqual(['Bound'] * count, [
                arq['state'] for arq in response.json_body['arqs']])
        # The page holds every ARQ of the instance: their states are read
        # off it, no second statement.
        self._assert_same(counts, 1)

    def test_resolved_list_without_an_instance(self):
        # Only the resolved ARQs, in one statement however many there are.
        counts = {}
        resolved = []
        for count in (SMALL, LARGE):
            uuids = self._create(count)[1]
            self._bind(uuids, uuidutils.generate_uuid())
            for index, arq in enumerate(objects.ARQ.list(
                    self.context, filters={'uuid': uuids})):
                if index % 2 == 0:
                    arq.state = ('Bound', 'BindFailed', 'Deleting')[
                        index // 2 % 3]
                    arq.save(self.context)
                    resolved.append(arq.uuid)
            counts[count], response = self._request(
                'GET', '/v2/accelerator_requests?bind_state=resolved'
                '&limit=1000')
            self.assertEqual(sorted(resolved), sorted(
                arq['uuid'] for arq in response.json_body['arqs']))
        self.assertGreater(len(resolved), 20)
        self._assert_same(counts, 1)

    def test_resolved_page_that_is_not_the_whole_instance(self):
        # A full page may leave out an ARQ still binding: the instance's
        # states are then asked for (one statement more), and a later one
        # still binding makes it 423.
        uuids = self._create(LARGE)[1]
        instance = uuidutils.generate_uuid()
        self._bind(uuids, instance)
        first, *rest = sorted(
            objects.ARQ.list(self.context, filters={'uuid': uuids}),
            key=lambda arq: arq.id)
        first.state = 'Bound'
        first.save(self.context)
        path = ('/v2/accelerator_requests?instance=%s&bind_state=resolved'
                '&limit=1' % instance)
        count, response = self._request('GET', path, status=423)
        self.assertEqual(2, count)
        self.assertIn(', '.join(arq.uuid for arq in rest), response.text)
        for arq in rest:
            arq.state = 'BindFailed'
            arq.save(self.context)
        count, response = self._request('GET', path)
        # Resolved: the full page is read again, after the states.
        self.assertEqual((3, [first.uuid]), (count, [
            arq['uuid'] for arq in response.json_body['arqs']]))
        # Filtered by something more than the instance: asked for too.
        count, _ = self._request(
            'GET', '/v2/accelerator_requests?instance=%s&bind_state=resolved'
            '&sort_key=state' % instance)
        self.assertEqual(2, count)

    def test_resolved_page_is_no_older_than_the_states_it_answers(self):
        # The binds end after a full page was read and before the states
        # are asked for: the answer shows them Bound, not BindStarted.
        uuids = self._create(LARGE)[1]
        instance = uuidutils.generate_uuid()
        self._bind(uuids, instance)
        ask = arq_queries.unresolved_uuids

        def binds_end_first(*args):
            for arq in objects.ARQ.list(self.context,
                                        filters={'uuid': uuids}):
                arq.state = 'Bound'
                arq.save(self.context)
            return ask(*args)

        self.useFixture(fixtures.MockPatchObject(
            arq_queries, 'unresolved_uuids', side_effect=binds_end_first))
        for query in ('&limit=1', '&sort_key=state'):
            _, response = self._request(
                'GET', '/v2/accelerator_requests?instance=%s'
                '&bind_state=resolved%s' % (instance, query))
            self.assertEqual({'Bound'}, {
                arq['state'] for arq in response.json_body['arqs']})

    def test_unbind(self):
        counts = {}
        for count in (SMALL, LARGE):
            uuids = self._create(count)[1]
            self._bind(uuids, uuidutils.generate_uuid())
            counts[count] = self._unbind(uuids)
            self.assertEqual(['Unbound'] * count, self._states(uuids))
        self._assert_same(counts, 4)

    def test_delete_by_uuids(self):
        counts = {}
        for count in (SMALL, LARGE):
            uuids = self._create(count)[1]
            counts[count], _ = self._request(
                'DELETE', '/v2/accelerator_requests?arqs=%s' % ','.join(uuids),
                status=204)
            self.assertEqual([None] * count, self._states(uuids))
        self._assert_same(counts, 4)

    def test_delete_by_instance(self):
        counts = {}
        for count in (SMALL, LARGE):
            uuids = self._create(count)[1]
            instance = uuidutils.generate_uuid()
            self._bind(uuids, instance)
            counts[count], _ = self._request(
                'DELETE', '/v2/accelerator_requests?instance=%s' % instance,
                status=204)
            self.assertEqual([None] * count, self._states(uuids))
        self._assert_same(counts, 4)


class TestARQAPIStatementCountsMySQL(TestARQAPIStatementCounts):

    backend = 'mysql'


class TestARQAPIStatementCountsPostgreSQL(TestARQAPIStatementCounts):

    backend = 'postgresql'
