"""POST /v2/{devices,deployables}/{uuid}/clear_health (2.6) through the
real WSGI application, a conductor by local RPC and the real Placement."""


import webob
from oslo_utils import uuidutils

from cyborg.common import vocabulary
from cyborg import context as cyborg_context
from cyborg import objects
from cyborg.api import app
from cyborg.db.queries import health as health_queries
from cyborg.db.queries import history as history_queries
from cyborg.tests.fixtures import placement as placement_fixture
from cyborg.tests.unit.api import real_app
from cyborg.tests.unit.db import records

ADMIN = real_app.ADMIN
MEMBER = real_app.MEMBER
FAILED = vocabulary.Health.FAILED


class ClearHealthAPITest(real_app.RealAppTestCase):

    conductor_server = 'clear-health-api-test'

    def setUp(self):
        super().setUp()
        self.useFixture(placement_fixture.PlacementFixture())
        self.context = cyborg_context.get_admin_context()
        self.device = records.make_device(self.context)
        self.deployable = records.make_deployable(self.context, self.device)
        self.targets = {'devices': self.device.uuid,
                        'deployables': self.deployable.uuid}
        health_queries.set_device_health(self.context, self.device.id,
                                         FAILED, 'AER fatal errors: 1')
        health_queries.set_deployable_health(
            self.context, self.deployable.id, FAILED, 'broken')

    def health(self, collection):
        if collection == 'devices':
            return objects.Device.get_by_uuid(
                self.context, self.device.uuid).health
        return objects.Deployable.get_by_uuid(
            self.context, self.deployable.uuid).health

    def events(self, collection):
        key = collection[:-1] + '_uuid'
        return [(entry.event, entry.user_id, entry.project_id)
                for entry in history_queries.page(
                    self.context, **{key: self.targets[collection]})
                if entry.event == vocabulary.HistoryEvent.CLEAR_HEALTH]

    def test_clear_answers_the_object_healthy_with_an_entry(self):
        for collection, uuid in self.targets.items():
            path = '/v2/%s/%s/clear_health' % (collection, uuid)
            shown = self.post(path, 200).json_body
            self.assertEqual(uuid, shown['uuid'])
            self.assertEqual('healthy', shown['health'])
            self.assertIsNone(shown['health_reason'])
            self.assertEqual('healthy', self.health(collection))
            self.assertEqual([('clear_health', 'operator', 'admin-project')],
                             self.events(collection))
            # Again: nothing changes, no second entry; an empty object is
            # a body it takes.
            self.post(path, 200, body={})
            self.assertEqual(1, len(self.events(collection)))

    def test_a_member_is_refused_and_nothing_changes(self):
        for collection, uuid in self.targets.items():
            response = self.post('/v2/%s/%s/clear_health'
                                 % (collection, uuid), 403, headers=MEMBER)
            self.assertIn('cyborg:%s:clear_health' % collection[:-1],
                          response.text)
            self.assertEqual(FAILED, self.health(collection))

    def test_an_unknown_uuid_is_404(self):
        for collection in self.targets:
            for uuid in (uuidutils.generate_uuid(), 'not-a-uuid'):
                response = self.post('/v2/%s/%s/clear_health'
                                     % (collection, uuid), 404)
                self.assertIn(uuid, response.json_body['error_message'])

    def test_below_2_6_the_path_is_unknown(self):
        for collection, uuid in self.targets.items():
            self.post('/v2/%s/%s/clear_health' % (collection, uuid), 404,
                      version='2.5')
            self.assertEqual(FAILED, self.health(collection))

    def test_a_bad_body_is_400_and_nothing_changes(self):
        for collection, uuid in self.targets.items():
            for body in ([], 'x', {'health': 'healthy'}, b'{not json'):
                response = self.post('/v2/%s/%s/clear_health'
                                     % (collection, uuid), 400, body=body)
                self.assertIn('error_message', response.json_body)
            self.assertEqual(FAILED, self.health(collection))
            self.assertEqual([], self.events(collection))

    def test_a_pinned_conductor_is_409_and_nothing_changes(self):
        self.flags(conductor='1.5', group='upgrade_levels')
        self.application = app.setup_app()
        for collection, uuid in self.targets.items():
            response = self.post('/v2/%s/%s/clear_health'
                                 % (collection, uuid), 409)
            self.assertIn('clear_health',
                          response.json_body['error_message'])
            self.assertEqual(FAILED, self.health(collection))


class HealthFilterAPITest(real_app.RealAppTestCase):
    """GET /v2/devices?health= and /v2/deployables?health= (2.6)."""

    conductor_server = 'health-filter-api-test'

    def setUp(self):
        super().setUp()
        self.context = cyborg_context.get_admin_context()
        self.devices = {}
        self.deployables = {}
        for index, health in enumerate(vocabulary.Health.ALL):
            device = records.make_device(
                self.context, hostname='host-%d' % index)
            deployable = records.make_deployable(self.context, device)
            health_queries.set_device_health(self.context, device.id,
                                             health, 'why')
            # The deployables' healths go the other way round.
            health_queries.set_deployable_health(
                self.context, deployable.id,
                vocabulary.Health.ALL[-1 - index], 'why')
            self.devices[health] = device.uuid
            self.deployables[vocabulary.Health.ALL[-1 - index]] = \
                deployable.uuid

    def get(self, path, status=200, version='2.6'):
        request = webob.Request.blank(path, headers=dict(ADMIN, **{
            'OpenStack-API-Version': 'accelerator ' + version}))
        response = request.get_response(self.application)
        self.assertEqual(status, response.status_int, response.text)
        return response.json_body

    def test_each_health_lists_its_own(self):
        for health in vocabulary.Health.ALL:
            devices = self.get('/v2/devices?health=%s' % health)['devices']
            self.assertEqual([(self.devices[health], health)],
                             [(item['uuid'], item['health'])
                              for item in devices])
            deployables = self.get('/v2/deployables?health=%s'
                                   % health)['deployables']
            self.assertEqual([(self.deployables[health], health)],
                             [(item['uuid'], item['health'])
                              for item in deployables])
        # The upstream form too.
        self.assertEqual(
            [self.devices['failed']],
            [item['uuid'] for item in self.get(
                '/v2/devices?filters=health:failed')['devices']])

    def test_a_bad_value_and_below_2_6_are_400(self):
        for collection in ('devices', 'deployables'):
            body = self.get('/v2/%s?health=sick' % collection, 400)
            self.assertIn('health', body['error_message'])
            body = self.get('/v2/%s?health=failed' % collection, 400,
                            version='2.5')
            self.assertIn('health', body['error_message'])
