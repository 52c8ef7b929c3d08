"""POST /v2/{devices,deployables}/{uuid}/{drain,undrain} (2.6) through the
real WSGI application, a conductor by local RPC and the real Placement."""


import webob
from oslo_utils import uuidutils

from cyborg import context as cyborg_context
from cyborg import objects
from cyborg.api import app
from cyborg.db.queries import history as history_queries
from cyborg.tests.fixtures import placement as placement_fixture
from cyborg.tests.unit.api import real_app
from cyborg.tests.unit.db import records

ADMIN = real_app.ADMIN
MEMBER = real_app.MEMBER


class DrainAPITestCase(real_app.RealAppTestCase):
    """A device with one deployable, a conductor, Placement."""

    conductor_server = 'drain-api-test'

    def setUp(self):
        super().setUp()
        self.useFixture(placement_fixture.PlacementFixture())
        self.context = cyborg_context.get_admin_context()
        self.device = records.make_device(self.context)
        self.deployable = records.make_deployable(self.context, self.device)
        self.targets = {'devices': self.device.uuid,
                        'deployables': self.deployable.uuid}

    def drain_since(self, collection):
        if collection == 'devices':
            return objects.Device.get_by_uuid(
                self.context, self.device.uuid).drain_since
        return objects.Deployable.get_by_uuid(
            self.context, self.deployable.uuid).drain_since

    def events(self, collection):
        key = collection[:-1] + '_uuid'
        return [(entry.event, entry.reason, entry.user_id)
                for entry in history_queries.page(
                    self.context, **{key: self.targets[collection]})]



class DrainAPITest(DrainAPITestCase):

    def test_drain_answers_the_object_draining_twice_keeps_the_time(self):
        for collection, uuid in self.targets.items():
            path = '/v2/%s/%s/drain' % (collection, uuid)
            shown = self.post(path, 200).json_body
            self.assertEqual(uuid, shown['uuid'])
            self.assertEqual('drained', shown['drain'])
            self.assertIsNotNone(shown['drain_since'])
            first = self.drain_since(collection)
            self.assertIsNotNone(first)

            again = self.post(path, 200, body={'reason': 'again'}).json_body

            self.assertEqual(shown['drain_since'], again['drain_since'])
            self.assertEqual(first, self.drain_since(collection))
            self.assertEqual([('drain', None, 'operator')],
                             self.events(collection))

    def test_undrain_clears_it_and_an_undrained_one_is_a_no_op(self):
        for collection, uuid in self.targets.items():
            undrain = '/v2/%s/%s/undrain' % (collection, uuid)
            shown = self.post(undrain, 200).json_body
            self.assertIsNone(shown['drain'])
            self.assertEqual([], self.events(collection))

            self.post('/v2/%s/%s/drain' % (collection, uuid), 200,
                      body={'reason': 'replace the card'})
            shown = self.post(undrain, 200,
                              body={'reason': 'replaced'}).json_body

            self.assertIsNone(shown['drain'])
            self.assertIsNone(shown['drain_since'])
            self.assertIsNone(self.drain_since(collection))
            self.assertEqual([('undrain', 'replaced', 'operator'),
                              ('drain', 'replace the card', 'operator')],
                             self.events(collection))

    def test_a_member_is_refused_and_nothing_changes(self):
        for collection, uuid in self.targets.items():
            for action in ('drain', 'undrain'):
                response = self.post('/v2/%s/%s/%s' % (collection, uuid,
                                                       action),
                                     403, headers=MEMBER)
                self.assertIn('cyborg:%s:%s' % (collection[:-1], action),
                              response.text)
            self.assertIsNone(self.drain_since(collection))

    def test_an_unknown_uuid_is_404(self):
        for collection in self.targets:
            for uuid in (uuidutils.generate_uuid(), 'not-a-uuid'):
                response = self.post('/v2/%s/%s/drain' % (collection, uuid),
                                     404)
                self.assertIn(uuid, response.json_body['error_message'])

    def test_below_2_6_the_paths_are_unknown(self):
        for collection, uuid in self.targets.items():
            for action in ('drain', 'undrain'):
                self.post('/v2/%s/%s/%s' % (collection, uuid, action), 404,
                          version='2.5')
            self.assertIsNone(self.drain_since(collection))

    def test_a_bad_body_is_400_and_nothing_changes(self):
        bodies = ([], 'reason', {'reason': 5}, {'reason': ''},
                  {'reason': 'x' * 256}, {'why': 'x'}, b'{not json')
        for collection, uuid in self.targets.items():
            for body in bodies:
                response = self.post('/v2/%s/%s/drain' % (collection, uuid),
                                     400, body=body)
                self.assertIn('error_message', response.json_body)
            self.assertIsNone(self.drain_since(collection))
            self.assertEqual([], self.events(collection))

    def test_a_pinned_conductor_is_409_and_nothing_changes(self):
        self.flags(conductor='1.5', group='upgrade_levels')
        # The API's conductor client reads the pin when the app is made.
        self.application = app.setup_app()
        for collection, uuid in self.targets.items():
            response = self.post('/v2/%s/%s/drain' % (collection, uuid), 409)
            self.assertIn('set_drain', response.json_body['error_message'])
            self.assertIsNone(self.drain_since(collection))


class DrainFilterTest(DrainAPITestCase):
    """?drain= on the device and deployable lists (2.6)."""

    def get(self, path, status=200, version='2.6'):
        request = webob.Request.blank(path, headers=dict(
            ADMIN, **{'OpenStack-API-Version': 'accelerator ' + version}))
        response = request.get_response(self.application)
        self.assertEqual(status, response.status_int, response.text)
        return response.json_body

    def uuids(self, collection, value):
        return sorted(item['uuid'] for item in self.get(
            '/v2/%s?drain=%s' % (collection, value))[collection])

    def test_each_state_lists_its_own(self):
        # A second device: one drained holding a handle, one holding none.
        busy = records.make_device(self.context)
        region = records.make_deployable(self.context, busy)
        records.make_attach_handle(
            self.context, region,
            records.make_controlpath_id(self.context, busy), in_use=True)
        for collection, uuid in (('devices', busy.uuid),
                                 ('deployables', region.uuid),
                                 ('devices', self.device.uuid)):
            self.post('/v2/%s/%s/drain' % (collection, uuid), 200)

        self.assertEqual([busy.uuid], self.uuids('devices', 'draining'))
        self.assertEqual([self.device.uuid], self.uuids('devices', 'drained'))
        self.assertEqual([], self.uuids('devices', 'none'))
        self.assertEqual([region.uuid], self.uuids('deployables', 'draining'))
        self.assertEqual([], self.uuids('deployables', 'drained'))
        self.assertEqual([self.deployable.uuid],
                         self.uuids('deployables', 'none'))
        # The upstream filters= form says the same.
        self.assertEqual([busy.uuid], sorted(
            item['uuid'] for item in self.get(
                '/v2/devices?filters=drain:draining')['devices']))

    def test_the_filter_adds_no_statement(self):
        for collection in ('devices', 'deployables'):
            counts = []
            for query in ('', '?drain=draining', '?drain=none'):
                del self.statements[:]
                self.get('/v2/%s%s' % (collection, query))
                counts.append(len(self.statements))
            self.assertEqual([counts[0]] * 3, counts, collection)

    def test_a_bad_value_or_an_older_version_is_400(self):
        for collection in ('devices', 'deployables'):
            body = self.get('/v2/%s?drain=maybe' % collection, 400)
            self.assertIn('drain must be one of', body['error_message'])
            body = self.get('/v2/%s?drain=drained' % collection, 400,
                            version='2.5')
            self.assertIn('drain', body['error_message'])



class MySQLDrainAPITest(DrainAPITest):
    backend = 'mysql'


class PostgreSQLDrainAPITest(DrainAPITest):
    backend = 'postgresql'


class MySQLDrainFilterTest(DrainFilterTest):
    backend = 'mysql'


class PostgreSQLDrainFilterTest(DrainFilterTest):
    backend = 'postgresql'
