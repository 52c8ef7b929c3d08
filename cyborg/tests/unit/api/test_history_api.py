"""GET /v2/devices/{uuid}/history and /v2/deployables/{uuid}/history
(microversion 2.5) through the real WSGI application, on every backend.

Newest first, a page at a time (``limit``, ``marker`` the last entry's
id), a bad page parameter a 400 with Cyborg's error body; admins and the
service role see every entry, a project's readers and members only those
of their own ARQs, others are refused; below 2.5 and for an unknown uuid
404; no method changes an entry (405). A page costs the same statements
for 3 entries as for 60.
"""

import datetime
import json
import urllib.parse

import webob
from oslo_utils import uuidutils

from cyborg import context as cyborg_context
from cyborg.db.queries import history as history_queries
from cyborg.tests.unit.api import real_app
from cyborg.tests.unit.db import records

PROJECT = 'project-a'
OTHER_PROJECT = 'project-b'
START = datetime.datetime(2026, 12, 1, 8, 0, 0, 123456)


def as_role(role, project=PROJECT):
    """noauth headers of a caller with only ``role`` in ``project``."""
    return {'X-Roles': role, 'X-Project-Id': project,
            'X-Service-Identity-Status': 'Invalid'}


class HistoryAPITests(real_app.RealAppTestCase):

    def setUp(self):
        super().setUp()
        self.context = cyborg_context.get_admin_context()
        self.device = records.make_device(self.context)
        self.deployable = records.make_deployable(self.context, self.device)
        self.added = 0

    def add(self, count, event='bind', arq_project_id=PROJECT,
            deployable=True):
        """Append ``count`` entries of the device (and its deployable)."""
        entries = []
        for _ in range(count):
            self.added += 1
            entry = {'created_at': START + datetime.timedelta(
                         seconds=self.added),
                     'device_id': self.device.id,
                     'device_uuid': self.device.uuid, 'event': event,
                     'outcome': 'ok', 'arq_project_id': arq_project_id,
                     'arq_uuid': uuidutils.generate_uuid(),
                     'user_id': 'nova', 'agent': 'compute-1'}
            if deployable:
                entry.update(deployable_id=self.deployable.id,
                             deployable_uuid=self.deployable.uuid)
            entries.append(entry)
        history_queries.append(self.context, entries)

    def request(self, path, method='GET', version='2.5', **headers):
        headers['OpenStack-API-Version'] = 'accelerator ' + version
        return webob.Request.blank(path, method=method,
                                   headers=headers).get_response(
            self.application)

    def path(self, collection='devices', uuid=None):
        if uuid is None:
            uuid = (self.device if collection == 'devices'
                    else self.deployable).uuid
        return '/v2/%s/%s/history' % (collection, uuid)

    def get(self, path, status=200, **headers):
        response = self.request(path, **headers)
        self.assertEqual(status, response.status_int, response.text)
        return response.json_body

    def test_newest_first_a_page_at_a_time(self):
        self.add(5)
        pages = []
        path = self.path() + '?limit=2'
        while path:
            body = self.get(path)
            pages.append([entry['id'] for entry in body['history']])
            path = body.get('next')
            if path:
                path = path.replace('http://localhost', '')
        every = [entry['id'] for entry in self.get(self.path())['history']]
        self.assertEqual(sorted(every, reverse=True), every)
        self.assertEqual([every[0:2], every[2:4], every[4:]], pages)
        self.assertEqual(5, len(every))

    def test_an_entry_shows_what_was_recorded(self):
        self.add(1)
        [entry] = self.get(self.path('deployables'))['history']
        self.assertEqual(
            {'id', 'created_at', 'device_uuid', 'deployable_uuid', 'event',
             'outcome', 'reason', 'image_id', 'image_hash', 'arq_uuid',
             'instance_uuid', 'arq_project_id', 'user_id', 'project_id',
             'request_id', 'agent'}, set(entry))
        self.assertEqual(
            (self.device.uuid, self.deployable.uuid, 'bind', 'ok',
             '2026-12-01T08:00:01+00:00'),
            (entry['device_uuid'], entry['deployable_uuid'], entry['event'],
             entry['outcome'], entry['created_at']))

    def test_a_deployable_has_its_own_entries_only(self):
        self.add(2)
        self.add(3, event='disable', arq_project_id=None, deployable=False)
        self.assertEqual(5, len(self.get(self.path())['history']))
        self.assertEqual(
            ['bind', 'bind'],
            [entry['event']
             for entry in self.get(self.path('deployables'))['history']])

    def test_bad_page_parameters_are_400_with_the_error_body(self):
        for query in ('limit=0', 'limit=x', 'limit=1001', 'marker=x',
                      'marker=0', 'marker=-3', 'sort_key=id', 'limit=1&limit=2'):
            response = self.request(self.path() + '?' + query)
            self.assertEqual(400, response.status_int, query)
            fault = json.loads(response.json_body['error_message'])
            self.assertEqual('Client', fault['faultcode'], query)
            self.assertTrue(fault['faultstring'], query)

    def test_below_2_5_and_unknown_uuids_are_404(self):
        self.add(1)
        for collection in ('devices', 'deployables'):
            self.assertEqual(404, self.request(
                self.path(collection), version='2.4').status_int)
            self.assertEqual(404, self.request(self.path(
                collection, uuidutils.generate_uuid())).status_int)

    def test_a_project_sees_the_entries_of_its_own_arqs_only(self):
        self.add(2, arq_project_id=PROJECT)
        self.add(3, arq_project_id=OTHER_PROJECT)
        self.add(1, event='program', arq_project_id=None)
        for collection in ('devices', 'deployables'):
            path = self.path(collection)
            for role in ('member', 'reader'):
                own = self.get(path, **as_role(role))['history']
                self.assertEqual({PROJECT},
                                 {entry['arq_project_id'] for entry in own})
                self.assertEqual(2, len(own))
            self.assertEqual([], self.get(path, **as_role(
                'member', 'project-c'))['history'])
            self.assertEqual(6, len(self.get(path, **as_role(
                'service', 'services'))['history']))
            self.assertEqual(6, len(self.get(path, **as_role(
                'admin', 'project-c'))['history']))
            self.assertEqual(403, self.request(path, **as_role(
                'manager')).status_int)

    def test_no_method_changes_an_entry(self):
        self.add(1)
        for collection in ('devices', 'deployables'):
            for method in ('PUT', 'POST', 'DELETE', 'PATCH'):
                response = self.request(self.path(collection), method=method)
                self.assertEqual(405, response.status_int,
                                 (collection, method))
                self.assertEqual('GET', response.headers['Allow'])
        self.assertEqual(1, len(self.get(self.path())['history']))

    def test_a_page_costs_the_same_statements_for_3_and_60_entries(self):
        counts = []
        for count in (3, 57):
            self.add(count)
            self.statements = []
            body = self.get(self.path())
            counts.append(len(self.statements))
            self.assertEqual(self.added, len(body['history']))
        self.assertEqual(counts[0], counts[1])
        self.assertLessEqual(counts[1], 2)

    def test_next_keeps_the_limit_and_sets_the_marker(self):
        self.add(3)
        body = self.get(self.path() + '?limit=2')
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(
            body['next']).query)
        self.assertEqual({'limit': ['2'],
                          'marker': [str(body['history'][-1]['id'])]},
                         query)
        # As every list: a page shorter than the limit is the last.
        self.assertNotIn('next', self.get(self.path() + '?limit=4'))


class HistoryAPIMySQLTests(HistoryAPITests):

    backend = 'mysql'


class HistoryAPIPostgreSQLTests(HistoryAPITests):

    backend = 'postgresql'
