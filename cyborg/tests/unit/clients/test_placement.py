"""The Placement client against the real openstack-placement, in-process."""

from oslo_utils import uuidutils

from cyborg.clients import placement
from cyborg import exception
from cyborg.tests import base
from cyborg.tests.fixtures import placement as placement_fixture


class RacingClient(placement.PlacementClient):
    """A client whose first name lookup misses a provider created meanwhile.

    It stands for another process creating the same provider between this
    client's lookup and its POST.
    """

    def __init__(self, raw_adapter, **kwargs):
        super().__init__(**kwargs)
        self._raw_adapter = raw_adapter
        self.raced_uuid = None

    def get_provider_by_name(self, name):
        if self.raced_uuid is None:
            self.raced_uuid = uuidutils.generate_uuid()
            response = self._raw_adapter.post(
                '/resource_providers',
                json={'name': name, 'uuid': self.raced_uuid})
            assert response.status_code == 200, response.text
            return None
        return super().get_provider_by_name(name)


class TestPlacementClient(base.TestCase):

    def setUp(self):
        super().setUp()
        self.placement = self.useFixture(placement_fixture.PlacementFixture())
        self.client = placement.PlacementClient()

    def _tree(self, root_uuid):
        response = self.placement.adapter.get(
            '/resource_providers', params={'in_tree': root_uuid})
        self.assertEqual(200, response.status_code, response.text)
        return {provider['name']: provider
                for provider in response.json()['resource_providers']}

    def test_is_reachable(self):
        self.assertTrue(self.client.is_reachable())

    def test_is_not_reachable_when_nothing_listens(self):
        self.flags(group='placement', endpoint='http://127.0.0.1:9')
        self.assertFalse(placement.PlacementClient().is_reachable())

    def test_connection_failure_raises_placement_unavailable(self):
        self.flags(group='placement', endpoint='http://127.0.0.1:9')
        client = placement.PlacementClient()
        error = self.assertRaises(exception.PlacementUnavailable,
                                  client.get_provider_by_name, 'node1')
        self.assertIsInstance(error, exception.ServiceUnavailable)

    def test_get_provider_by_name_returns_none_when_absent(self):
        self.assertIsNone(self.client.get_provider_by_name('node1'))

    def test_ensure_provider_creates_once(self):
        first = self.client.ensure_provider('node1')
        second = self.client.ensure_provider('node1')

        self.assertTrue(uuidutils.is_uuid_like(first))
        self.assertEqual(first, second)
        response = self.placement.adapter.get('/resource_providers')
        providers = response.json()['resource_providers']
        self.assertEqual([('node1', first)],
                         [(p['name'], p['uuid']) for p in providers])

    def test_ensure_provider_uses_the_given_uuid(self):
        rp_uuid = uuidutils.generate_uuid()

        self.assertEqual(rp_uuid,
                         self.client.ensure_provider('node1', uuid=rp_uuid))
        self.assertEqual('node1',
                         self.client.get_provider(rp_uuid)['name'])

    def test_ensure_provider_returns_an_existing_provider_as_is(self):
        existing = uuidutils.generate_uuid()
        self.placement.adapter.post(
            '/resource_providers', json={'name': 'node1', 'uuid': existing})

        self.assertEqual(existing, self.client.ensure_provider(
            'node1', uuid=uuidutils.generate_uuid()))

    def test_ensure_provider_links_the_parent(self):
        root = self.client.ensure_provider('node1')
        child = self.client.ensure_provider('node1_fpga', parent_uuid=root)

        tree = self._tree(root)
        self.assertEqual({'node1', 'node1_fpga'}, set(tree))
        self.assertEqual(child, tree['node1_fpga']['uuid'])
        self.assertEqual(root, tree['node1_fpga']['parent_provider_uuid'])
        self.assertEqual(root, tree['node1_fpga']['root_provider_uuid'])
        self.assertIsNone(tree['node1']['parent_provider_uuid'])

    def test_ensure_provider_tolerates_a_concurrent_create(self):
        client = RacingClient(self.placement.adapter)

        rp_uuid = client.ensure_provider('node1')

        self.assertIsNotNone(client.raced_uuid)
        self.assertEqual(client.raced_uuid, rp_uuid)

    def test_ensure_provider_refuses_a_uuid_used_by_another_name(self):
        rp_uuid = self.client.ensure_provider('node1')

        self.assertRaises(exception.ResourceProviderConflict,
                          self.client.ensure_provider, 'node2', uuid=rp_uuid)

    def test_ensure_provider_with_unknown_parent_raises_placement_error(self):
        error = self.assertRaises(
            exception.PlacementError, self.client.ensure_provider, 'node1',
            parent_uuid=uuidutils.generate_uuid())
        self.assertIn('400', str(error))

    def test_get_inventories_of_a_new_provider_is_empty(self):
        rp_uuid = self.client.ensure_provider('node1')

        self.assertEqual(
            {'resource_provider_generation': 0, 'inventories': {}},
            self.client.get_inventories(rp_uuid))

    def test_get_inventories_shows_what_placement_holds(self):
        rp_uuid = self.client.ensure_provider('node1')
        response = self.placement.adapter.put(
            '/resource_providers/%s/inventories' % rp_uuid,
            json={'resource_provider_generation': 0,
                  'inventories': {'FPGA': {'total': 2}}})
        self.assertEqual(200, response.status_code, response.text)

        inventories = self.client.get_inventories(rp_uuid)

        self.assertEqual(1, inventories['resource_provider_generation'])
        self.assertEqual(2, inventories['inventories']['FPGA']['total'])

    def test_get_inventories_of_unknown_provider_raises_not_found(self):
        rp_uuid = uuidutils.generate_uuid()

        error = self.assertRaises(exception.ResourceProviderNotFound,
                                  self.client.get_inventories, rp_uuid)
        self.assertIn(rp_uuid, str(error))

    def test_requests_use_microversion_1_39(self):
        # Consumer types exist from 1.38 on; older microversions answer 404.
        rp_uuid = self.client.ensure_provider('node1')
        response = self.client._adapter.get('/resource_providers/%s' % rp_uuid)
        self.assertEqual('placement 1.39',
                         response.headers['openstack-api-version'])


class TestPlacementFixtureServed(base.TestCase):

    def test_client_reaches_placement_over_a_socket(self):
        fixture = self.useFixture(
            placement_fixture.PlacementFixture(serve=True))
        client = placement.PlacementClient()

        rp_uuid = client.ensure_provider('node1')

        self.assertTrue(fixture.endpoint.startswith('http://127.0.0.1:'))
        self.assertEqual(rp_uuid, client.get_provider_by_name('node1')['uuid'])
