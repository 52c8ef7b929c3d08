"""The Placement client against the real openstack-placement, in-process."""

from oslo_utils import uuidutils

from cyborg import conf
from cyborg.clients import placement
from cyborg import exception
from cyborg.tests import base
from cyborg.tests.fixtures import placement as placement_fixture
from cyborg.tests.unit.clients import recording


class RacingClient(placement.PlacementClient):
    """A client whose first name lookup misses a provider created meanwhile.

    It stands for another process creating the same provider between this
    client's lookup and its POST.
    """

    def __init__(self, raw_adapter, config, **kwargs):
        super().__init__(config, **kwargs)
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
        self.client = placement.PlacementClient(conf.CONF)

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
        self.assertFalse(placement.PlacementClient(conf.CONF).is_reachable())

    def test_connection_failure_raises_placement_unavailable(self):
        self.flags(group='placement', endpoint='http://127.0.0.1:9')
        client = placement.PlacementClient(conf.CONF)
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
        client = RacingClient(self.placement.adapter, conf.CONF)

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
        client = placement.PlacementClient(conf.CONF)

        rp_uuid = client.ensure_provider('node1')

        self.assertTrue(fixture.endpoint.startswith('http://127.0.0.1:'))
        self.assertEqual(rp_uuid, client.get_provider_by_name('node1')['uuid'])


class TestProviderTreeMethods(base.TestCase):
    """Providers, inventories, traits and classes through the client."""

    def setUp(self):
        super().setUp()
        self.placement = self.useFixture(placement_fixture.PlacementFixture())
        self.client = recording.RecordingClient(conf.CONF)
        self.root = self.client.ensure_provider('node1')

    def _raw(self, url):
        response = self.placement.adapter.get(url)
        self.assertEqual(200, response.status_code, response.text)
        return response.json()

    def _put_inventory(self, rp_uuid, inventories):
        generation = self._raw('/resource_providers/%s' % rp_uuid)[
            'generation']
        response = self.placement.adapter.put(
            '/resource_providers/%s/inventories' % rp_uuid,
            json={'resource_provider_generation': generation,
                  'inventories': inventories})
        self.assertEqual(200, response.status_code, response.text)

    def test_create_provider_under_a_parent(self):
        rp_uuid = uuidutils.generate_uuid()

        created = self.client.create_provider(rp_uuid, 'node1_fpga',
                                              parent_uuid=self.root)

        self.assertEqual((rp_uuid, 'node1_fpga', self.root, 0),
                         (created['uuid'], created['name'],
                          created['parent_provider_uuid'],
                          created['generation']))

    def test_create_provider_refuses_a_taken_name_or_uuid(self):
        rp_uuid = uuidutils.generate_uuid()
        self.client.create_provider(rp_uuid, 'node1_fpga', self.root)

        self.assertRaises(exception.ResourceProviderConflict,
                          self.client.create_provider,
                          uuidutils.generate_uuid(), 'node1_fpga', self.root)
        self.assertRaises(exception.ResourceProviderConflict,
                          self.client.create_provider, rp_uuid, 'other',
                          self.root)

    def test_get_provider_tree_lists_the_tree_or_the_providers_with_traits(self):
        owned = uuidutils.generate_uuid()
        other = uuidutils.generate_uuid()
        self.client.create_provider(owned, 'node1_a', self.root)
        self.client.create_provider(other, 'node1_b', self.root)
        self.client.ensure_provider('node2')
        self.client.set_traits(owned, ['OWNER_CYBORG'])

        tree = self.client.get_provider_tree(self.root)
        only_owned = self.client.get_provider_tree(
            self.root, required_traits=['OWNER_CYBORG'])

        self.assertEqual({self.root, owned, other},
                         {provider['uuid'] for provider in tree})
        self.assertEqual([owned],
                         [provider['uuid'] for provider in only_owned])

    def test_delete_provider_twice_reports_it_already_gone(self):
        rp_uuid = uuidutils.generate_uuid()
        self.client.create_provider(rp_uuid, 'node1_fpga', self.root)

        self.assertTrue(self.client.delete_provider(rp_uuid))
        self.assertFalse(self.client.delete_provider(rp_uuid))
        self.assertIsNone(self.client.get_provider(rp_uuid))

    def test_delete_provider_with_children_raises_conflict(self):
        self.client.create_provider(uuidutils.generate_uuid(), 'node1_fpga',
                                    self.root)

        self.assertRaises(exception.ResourceProviderConflict,
                          self.client.delete_provider, self.root)

    def test_ensure_resource_classes_creates_custom_ones_once_each(self):
        self.client.requests.clear()

        self.client.ensure_resource_classes(
            ['FPGA', 'CUSTOM_PCI', 'CUSTOM_PCI', 'VGPU', 'CUSTOM_QAT'])
        self.client.ensure_resource_classes(['CUSTOM_PCI'])

        self.assertEqual([('PUT', '/resource_classes/CUSTOM_PCI'),
                          ('PUT', '/resource_classes/CUSTOM_QAT'),
                          ('PUT', '/resource_classes/CUSTOM_PCI')],
                         self.client.requests)
        self.assertEqual('CUSTOM_QAT',
                         self._raw('/resource_classes/CUSTOM_QAT')['name'])

    def test_ensure_traits_creates_custom_ones_once_each(self):
        self.client.requests.clear()

        self.client.ensure_traits(['OWNER_CYBORG', 'CUSTOM_FPGA_INTEL',
                                   'CUSTOM_FPGA_INTEL'])

        self.assertEqual([('PUT', '/traits/CUSTOM_FPGA_INTEL')],
                         self.client.requests)
        response = self.placement.adapter.get('/traits/CUSTOM_FPGA_INTEL')
        self.assertEqual(204, response.status_code)

    def test_ensure_traits_refuses_an_invalid_name(self):
        error = self.assertRaises(exception.PlacementError,
                                  self.client.ensure_traits,
                                  ['CUSTOM_FPGA-INTEL'])
        self.assertIn('400', str(error))

    def test_set_traits_replaces_them_and_returns_the_generation(self):
        self.client.ensure_traits(['CUSTOM_A', 'CUSTOM_B'])
        self.client.set_traits(self.root, ['CUSTOM_A', 'OWNER_CYBORG'])

        generation = self.client.set_traits(self.root, ['CUSTOM_B'])

        shown = self.client.get_traits(self.root)
        self.assertEqual(['CUSTOM_B'], shown['traits'])
        self.assertEqual(generation, shown['resource_provider_generation'])
        # Removing a trait from a provider leaves the trait itself.
        response = self.placement.adapter.get('/traits/CUSTOM_A')
        self.assertEqual(204, response.status_code)

    def test_set_inventories_keeps_the_fields_it_does_not_name(self):
        self._put_inventory(self.root, {'FPGA': {
            'total': 4, 'max_unit': 2, 'allocation_ratio': 2.0,
            'step_size': 2, 'min_unit': 2}})

        generation = self.client.set_inventories(
            self.root, {'FPGA': {'reserved': 4}})

        shown = self.client.get_inventories(self.root)
        self.assertEqual(generation, shown['resource_provider_generation'])
        self.assertEqual(
            {'total': 4, 'reserved': 4, 'max_unit': 2, 'min_unit': 2,
             'step_size': 2, 'allocation_ratio': 2.0},
            shown['inventories']['FPGA'])

    def test_set_inventories_replaces_the_classes(self):
        self._put_inventory(self.root, {'FPGA': {'total': 4}})

        self.client.set_inventories(self.root, {'PGPU': {'total': 1}})

        self.assertEqual(['PGPU'], list(
            self.client.get_inventories(self.root)['inventories']))

    def test_set_inventories_of_unknown_provider_raises_not_found(self):
        self.assertRaises(exception.ResourceProviderNotFound,
                          self.client.set_inventories,
                          uuidutils.generate_uuid(), {'FPGA': {'total': 1}})

    def test_generation_conflicts_are_retried_with_a_fresh_read(self):
        client = recording.GenerationBumpingClient(
            self.placement.adapter, conf.CONF, bumps=1)
        self._put_inventory(self.root, {'FPGA': {'total': 4}})

        client.set_inventories(self.root, {'FPGA': {'total': 4,
                                                    'reserved': 4}})
        client.bumps = 1
        client.set_traits(self.root, ['OWNER_CYBORG'])

        self.assertEqual(0, client.bumps)
        inventory_url = '/resource_providers/%s/inventories' % self.root
        traits_url = '/resource_providers/%s/traits' % self.root
        self.assertEqual([('GET', inventory_url), ('PUT', inventory_url),
                          ('GET', inventory_url), ('PUT', inventory_url),
                          ('GET', traits_url), ('PUT', traits_url),
                          ('GET', traits_url), ('PUT', traits_url)],
                         client.requests)
        self.assertEqual(4, self.client.get_inventories(self.root)[
            'inventories']['FPGA']['reserved'])
        self.assertEqual(['OWNER_CYBORG'],
                         self.client.get_traits(self.root)['traits'])

    def test_a_stale_generation_given_by_the_caller_is_retried(self):
        stale = self.client.get_inventories(self.root)
        self.client.set_traits(self.root, ['OWNER_CYBORG'])

        self.client.set_inventories(self.root, {'FPGA': {'total': 2}},
                                    current=stale)

        self.assertEqual(2, self.client.get_inventories(self.root)[
            'inventories']['FPGA']['total'])

    def test_endless_generation_conflicts_raise_after_bounded_attempts(self):
        client = recording.GenerationBumpingClient(
            self.placement.adapter, conf.CONF, bumps=100)

        self.assertRaises(exception.ResourceProviderConflict,
                          client.set_traits, self.root, ['OWNER_CYBORG'])
        self.assertEqual(placement.GENERATION_ATTEMPTS,
                         len(client.writes))
        self.assertEqual([], self.client.get_traits(self.root)['traits'])
