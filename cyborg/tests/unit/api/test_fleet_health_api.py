"""GET /v2/fleet: health, drain and the newest history of each device.

Through the real WSGI application, on every backend: each device and
deployable shows its health (with reason and since when) and its drain
state (``draining`` while an attach handle below it is in use, then
``drained``); the summary counts both; each device carries its newest
history entries, newest first, at most ``HISTORY_PER_DEVICE``, a
project's manager only those of its own ARQs; the history costs one
statement for 2 devices as for 40, however long their histories.
"""

import datetime

import sqlalchemy as sa
from oslo_utils import uuidutils

from cyborg import context as cyborg_context
from cyborg.api.views import fleet as fleet_views
from cyborg.db import models
from cyborg.db.queries import history as history_queries
from cyborg.tests.unit.api import real_app
from cyborg.tests.unit.api import test_fleet_api

Fleet = test_fleet_api.Fleet
as_role = test_fleet_api.as_role
get = test_fleet_api.get
START = datetime.datetime(2026, 12, 7, 9, 0, 0)
SINCE = datetime.datetime(2026, 12, 7, 8, 30, 15)
PER_DEVICE = fleet_views.HISTORY_PER_DEVICE


class TestFleetHealth(real_app.RealAppTestCase):

    def setUp(self):
        super().setUp()
        self.context = cyborg_context.get_admin_context()
        self.added = 0

    def _fleet(self, **headers):
        response = get(self.application, **headers)
        self.assertEqual(200, response.status_int, response.text)
        return response.json_body

    def _set(self, model, uuid, **values):
        table = model.__table__
        with self.database.engine.begin() as connection:
            connection.execute(sa.update(table).where(
                table.c.uuid == uuid).values(**values))

    def _add_history(self, device, count, arq_project_id='project-1',
                     event='bind'):
        entries = []
        for _ in range(count):
            self.added += 1
            entries.append({
                'created_at': START + datetime.timedelta(seconds=self.added),
                'device_id': device.id, 'device_uuid': device.uuid,
                'event': event, 'outcome': 'ok',
                'arq_uuid': uuidutils.generate_uuid(),
                'arq_project_id': arq_project_id, 'user_id': 'nova',
                'request_id': 'req-%d' % self.added, 'agent': 'host-a'})
        history_queries.append(self.context, entries)

    @staticmethod
    def _nodes(device):
        root, = device['deployables']
        region, = root['children']
        return root, region

    def test_health_and_drain_of_devices_and_deployables(self):
        fleet = Fleet(self.context)
        self._set(models.Device, fleet.fpga.uuid, health='degraded',
                  health_reason='AER non-fatal errors', health_since=SINCE,
                  drain_since=SINCE)
        self._set(models.Deployable, fleet.region.uuid, health='failed',
                  health_reason='region lost', health_since=SINCE,
                  drain_since=SINCE)
        body = self._fleet()
        fpga, = body['hosts'][0]['devices']
        root, region = self._nodes(fpga)
        since = '2026-12-07T08:30:15+00:00'
        # The region's handle held by a Bound ARQ: still draining.
        self.assertEqual(
            ('degraded', 'AER non-fatal errors', since, 'draining', since),
            (fpga['health'], fpga['health_reason'], fpga['health_since'],
             fpga['drain'], fpga['drain_since']))
        self.assertEqual(
            ('failed', 'region lost', since, 'draining', since),
            (region['health'], region['health_reason'],
             region['health_since'], region['drain'],
             region['drain_since']))
        self.assertEqual(('healthy', None, None, None, None),
                         (root['health'], root['health_reason'],
                          root['health_since'], root['drain'],
                          root['drain_since']))
        gpu, = body['hosts'][1]['devices']
        self.assertEqual(('healthy', None), (gpu['health'], gpu['drain']))
        self.assertEqual(
            {'health': {'devices': {'healthy': 1, 'degraded': 1,
                                    'failed': 0},
                        'deployables': {'healthy': 6, 'degraded': 0,
                                        'failed': 1}},
             'drain': {'devices': {'draining': 1, 'drained': 0},
                       'deployables': {'draining': 1, 'drained': 0}}},
            {key: body['summary'][key] for key in ('health', 'drain')})

        # Once no handle is in use below them: drained.
        with self.database.engine.begin() as connection:
            connection.execute(sa.update(models.AttachHandle.__table__)
                               .values(in_use=False))
        fpga, = self._fleet()['hosts'][0]['devices']
        self.assertEqual(('drained', 'drained'),
                         (fpga['drain'], self._nodes(fpga)[1]['drain']))

    def test_each_device_shows_its_newest_entries(self):
        fleet = Fleet(self.context)
        self._add_history(fleet.fpga, PER_DEVICE + 3)
        self._add_history(fleet.gpu, 2, arq_project_id=None,
                          event='disable')
        body = self._fleet()
        fpga, = body['hosts'][0]['devices']
        gpu, = body['hosts'][1]['devices']
        self.assertEqual(
            ['req-%d' % number
             for number in range(PER_DEVICE + 3, 3, -1)],
            [entry['request_id'] for entry in fpga['history']])
        self.assertEqual(
            {'id', 'created_at', 'event', 'outcome', 'reason',
             'deployable_uuid', 'image_id', 'arq_uuid', 'instance_uuid',
             'user_id', 'project_id', 'request_id', 'agent'},
            set(fpga['history'][0]))
        self.assertEqual(('bind', 'ok', 'nova', '2026-12-07T09:00:08+00:00'),
                         (fpga['history'][0]['event'],
                          fpga['history'][0]['outcome'],
                          fpga['history'][0]['user_id'],
                          fpga['history'][0]['created_at']))
        self.assertEqual(['req-10', 'req-9'],
                         [entry['request_id'] for entry in gpu['history']])

    def test_a_manager_sees_only_the_entries_of_his_projects_arqs(self):
        fleet = Fleet(self.context)
        self._add_history(fleet.fpga, 2, arq_project_id='project-1')
        self._add_history(fleet.fpga, 2, arq_project_id='project-2')
        self._add_history(fleet.fpga, 1, arq_project_id=None,
                          event='program')
        fpga, = self._fleet(**as_role('manager', 'project-2'))[
            'hosts'][0]['devices']
        self.assertEqual(['req-4', 'req-3'],
                         [entry['request_id'] for entry in fpga['history']])
        fpga, = self._fleet(**as_role('admin', 'project-3'))[
            'hosts'][0]['devices']
        self.assertEqual(5, len(fpga['history']))

    def test_the_history_costs_one_statement_for_2_devices_as_for_40(self):
        fleets = [Fleet(self.context)]
        self._add_history(fleets[0].fpga, 1)
        self.statements.clear()
        self._fleet()
        small = len(self.statements)
        for index in range(19):
            fleets.append(Fleet(self.context, suffix='-%d' % index))
        for fleet in fleets:
            self._add_history(fleet.fpga, PER_DEVICE + 2)
            self._add_history(fleet.gpu, 3)
        self.statements.clear()
        response = get(self.application, path='/v2/fleet?limit=40')
        self.assertEqual(200, response.status_int, response.text)
        body = response.json_body
        self.assertEqual(small, len(self.statements), self.statements)
        shown = [len(device['history']) for host in body['hosts']
                 for device in host['devices']]
        self.assertEqual(40, len(shown))
        self.assertEqual(sorted([PER_DEVICE] * 20 + [3] * 20), sorted(shown))
        self.assertEqual(1, sum('device_history' in statement
                                for statement in self.statements))


class TestFleetHealthMySQL(TestFleetHealth):

    backend = 'mysql'


class TestFleetHealthPostgreSQL(TestFleetHealth):

    backend = 'postgresql'
