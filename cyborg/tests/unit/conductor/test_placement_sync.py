"""placement_sync against the real openstack-placement and a SQLite database."""

import logging
import sys

import fixtures
from oslo_utils import uuidutils
from wsgi_intercept import interceptor

from cyborg import conf
from cyborg import context as cyborg_context
from cyborg import exception
from cyborg.clients import placement as placement_client
from cyborg.conductor import placement_sync
from cyborg.db import api as db_api
from cyborg.db.queries import deployables as deployable_queries
from cyborg.db.queries import devices as device_queries
from cyborg.db.queries import placement as placement_queries
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.fixtures import placement as placement_fixture
from cyborg.tests.unit.clients import recording
from cyborg.tests.unit.db import records
from cyborg.tests.unit.objects import test_list_statement_counts

HOST = 'compute-1'


class PlacementSyncTestCase(base.TestCase):
    """A host with an FPGA card (two regions) and a PCI card, and Placement."""

    def setUp(self):
        super().setUp()
        self.useFixture(database.Database())
        self.placement = self.useFixture(placement_fixture.PlacementFixture())
        self.context = cyborg_context.get_admin_context()
        self.client = recording.RecordingClient(conf.CONF)

        self.fpga = records.make_device(self.context, hostname=HOST)
        self.region0 = self._deployable(
            self.fpga, 'fpga-0000:5e:00.0-region0', 1, 'FPGA',
            ['CUSTOM_FPGA_INTEL', 'CUSTOM_FPGA_REGION_0'])
        self.region1 = self._deployable(
            self.fpga, 'fpga-0000:5e:00.0-region1', 1, 'FPGA',
            ['CUSTOM_FPGA_INTEL', 'CUSTOM_FPGA_REGION_1'])
        self.pci = records.make_device(self.context, hostname=HOST,
                                       type='AICHIP')
        self.pci_function = self._deployable(
            self.pci, 'pci-0000:af:00.0', 4, 'CUSTOM_PCI',
            ['CUSTOM_PCI_PRODUCT_ID_1001'])
        # Neither of these is a provider: no accelerators, no rc.
        self._deployable(self.fpga, 'fpga-0000:5e:00.0', 0, 'FPGA', [])
        self._deployable(self.pci, 'pci-0000:af:00.0-info', 2, None, [])
        # Another host's device is not this host's business.
        other = records.make_device(self.context, hostname='compute-2')
        self._deployable(other, 'fpga-0000:5e:00.0-region0', 1, 'FPGA', [])

    def _deployable(self, device, name, num_accelerators, resource_class,
                    traits, **overrides):
        deployable = records.make_deployable(
            self.context, device, name=name,
            num_accelerators=num_accelerators, **overrides)
        if resource_class is not None:
            records.make_attribute(self.context, deployable, 'rc',
                                   resource_class)
        for index, trait in enumerate(traits):
            records.make_attribute(self.context, deployable,
                                   'trait%d' % index, trait)
        return deployable

    def _get(self, url, **params):
        response = self.placement.adapter.get(url, params=params)
        self.assertEqual(200, response.status_code, response.text)
        return response.json()

    def _compute_node(self, host=HOST):
        providers = self._get('/resource_providers', name=host)[
            'resource_providers']
        return providers[0] if providers else None

    def _tree(self, host=HOST):
        """{name: provider} of the host's tree, root included."""
        root = self._compute_node(host)
        return {provider['name']: provider for provider in self._get(
            '/resource_providers', in_tree=root['uuid'])['resource_providers']}

    def _inventories(self, rp_uuid):
        return self._get('/resource_providers/%s/inventories'
                         % rp_uuid)['inventories']

    def _traits(self, rp_uuid):
        return set(self._get('/resource_providers/%s/traits'
                             % rp_uuid)['traits'])

    def _sync(self, client=None):
        return placement_sync.sync_host(self.context, client or self.client,
                                        HOST)


class TestSyncHost(PlacementSyncTestCase):

    def test_sync_builds_the_compute_node_and_one_provider_per_deployable(self):
        self.assertTrue(self._sync())

        tree = self._tree()
        root = tree.pop(HOST)
        self.assertIsNone(root['parent_provider_uuid'])
        self.assertEqual({HOST + '_fpga-0000:5e:00.0-region0',
                          HOST + '_fpga-0000:5e:00.0-region1',
                          HOST + '_pci-0000:af:00.0'}, set(tree))
        for deployable in (self.region0, self.region1, self.pci_function):
            provider = tree[HOST + '_' + deployable.name]
            self.assertEqual(deployable.rp_uuid, provider['uuid'])
            self.assertEqual(root['uuid'], provider['parent_provider_uuid'])
        self.assertEqual(
            {'FPGA': {'total': 1, 'max_unit': 1, 'reserved': 0,
                      'min_unit': 1, 'step_size': 1,
                      'allocation_ratio': 1.0}},
            self._inventories(self.region0.rp_uuid))
        self.assertEqual({'CUSTOM_PCI'},
                         set(self._inventories(self.pci_function.rp_uuid)))
        self.assertEqual(
            4, self._inventories(self.pci_function.rp_uuid)[
                'CUSTOM_PCI']['max_unit'])
        self.assertEqual({'OWNER_CYBORG', 'CUSTOM_FPGA_INTEL',
                          'CUSTOM_FPGA_REGION_1'},
                         self._traits(self.region1.rp_uuid))
        self.assertEqual({'OWNER_CYBORG', 'CUSTOM_PCI_PRODUCT_ID_1001'},
                         self._traits(self.pci_function.rp_uuid))
        self.assertIsNone(self._compute_node('compute-2'))

    def test_sync_creates_custom_classes_and_traits_once_per_name(self):
        self._sync()

        puts = sorted(url for method, url in self.client.requests
                      if method == 'PUT' and not url.startswith(
                          '/resource_providers'))
        self.assertEqual(['/resource_classes/CUSTOM_PCI',
                          '/traits/CUSTOM_FPGA_INTEL',
                          '/traits/CUSTOM_FPGA_REGION_0',
                          '/traits/CUSTOM_FPGA_REGION_1',
                          '/traits/CUSTOM_PCI_PRODUCT_ID_1001'], puts)
        self.assertEqual('CUSTOM_PCI',
                         self._get('/resource_classes/CUSTOM_PCI')['name'])

    def test_sync_uses_the_compute_node_nova_created(self):
        nova_uuid = uuidutils.generate_uuid()
        response = self.placement.adapter.post(
            '/resource_providers', json={'name': HOST, 'uuid': nova_uuid})
        self.assertEqual(200, response.status_code, response.text)

        self._sync()

        tree = self._tree()
        self.assertEqual(nova_uuid, tree[HOST]['uuid'])
        self.assertEqual(
            nova_uuid,
            tree[HOST + '_pci-0000:af:00.0']['parent_provider_uuid'])

    def test_an_unchanged_second_sync_writes_nothing(self):
        self._sync()
        self.client.requests.clear()

        self.assertTrue(self._sync())

        self.assertEqual([], self.client.writes)
        # The compute node and the cyborg providers of its tree: two reads.
        self.assertEqual(['GET', 'GET'],
                         [method for method, _url in self.client.requests])

    def test_a_restarted_conductor_checks_each_provider_once(self):
        self._sync()
        restarted = recording.RecordingClient(conf.CONF)

        self._sync(restarted)
        reads_after_restart = len(restarted.requests)
        restarted.requests.clear()
        self._sync(restarted)

        self.assertEqual([], restarted.writes)
        # Name, tree, then inventories and traits of each of 3 providers.
        self.assertEqual(2 + 3 * 2, reads_after_restart)
        self.assertEqual(2, len(restarted.requests))

    def test_a_provider_changed_behind_cyborgs_back_is_repaired(self):
        self._sync()
        rp_uuid = self.pci_function.rp_uuid
        generation = self._get('/resource_providers/%s' % rp_uuid)[
            'generation']
        response = self.placement.adapter.put(
            '/resource_providers/%s/inventories' % rp_uuid,
            json={'resource_provider_generation': generation,
                  'inventories': {'CUSTOM_PCI': {
                      'total': 4, 'max_unit': 1, 'allocation_ratio': 2.0}}})
        self.assertEqual(200, response.status_code, response.text)
        self.client.requests.clear()

        self._sync()

        record = self._inventories(rp_uuid)['CUSTOM_PCI']
        self.assertEqual((4, 4, 0), (record['total'], record['max_unit'],
                                     record['reserved']))
        self.assertEqual(2.0, record['allocation_ratio'])
        self.assertEqual(
            [('PUT', '/resource_providers/%s/inventories' % rp_uuid)],
            self.client.writes)

    def test_the_provider_of_a_vanished_deployable_is_deleted(self):
        self._sync()
        # A provider Nova made in the tree, without OWNER_CYBORG, stays.
        # (An empty one of that name is taken as a half-written one of
        # cyborg's: test_placement_sync_half_written.)
        root = self._compute_node()
        nova_child = uuidutils.generate_uuid()
        self.placement.adapter.post(
            '/resource_providers',
            json={'name': HOST + '_pci_0000_3b_00_0', 'uuid': nova_child,
                  'parent_provider_uuid': root['uuid']})
        response = self.placement.adapter.put(
            '/resource_providers/%s/inventories' % nova_child,
            json={'resource_provider_generation': 0,
                  'inventories': {'VGPU': {'total': 4}}})
        self.assertEqual(200, response.status_code, response.text)
        deployable_queries.destroy(self.context, self.region1.uuid)

        self._sync()

        tree = self._tree()
        self.assertEqual({HOST, HOST + '_fpga-0000:5e:00.0-region0',
                          HOST + '_pci-0000:af:00.0',
                          HOST + '_pci_0000_3b_00_0'}, set(tree))
        self.assertIsNone(self.client.get_provider(self.region1.rp_uuid))
        # The trait of the deleted provider still exists in Placement.
        response = self.placement.adapter.get('/traits/CUSTOM_FPGA_REGION_1')
        self.assertEqual(204, response.status_code)

    def test_a_host_without_devices_loses_its_providers_but_not_the_node(self):
        self._sync()
        device_queries.destroy(self.context, self.fpga.uuid)
        device_queries.destroy(self.context, self.pci.uuid)

        self._sync()

        self.assertEqual({HOST}, set(self._tree()))

    def test_a_host_with_nothing_to_offer_gets_no_compute_node(self):
        self.assertTrue(placement_sync.sync_host(self.context, self.client,
                                                 'compute-9'))

        self.assertIsNone(self._compute_node('compute-9'))
        self.assertEqual([], self.client.writes)

    def test_maintaining_reserves_the_whole_inventory_of_the_device(self):
        self._sync()
        device_queries.update(self.context, self.fpga.uuid,
                              {'status': 'maintaining'})

        self._sync()

        for deployable in (self.region0, self.region1):
            record = self._inventories(deployable.rp_uuid)['FPGA']
            self.assertEqual((1, 1, 1), (record['total'], record['max_unit'],
                                         record['reserved']))
        self.assertEqual(0, self._inventories(self.pci_function.rp_uuid)[
            'CUSTOM_PCI']['reserved'])

    def test_a_new_rc_attribute_moves_the_inventory(self):
        self._sync()
        records.make_attribute(self.context, self.pci_function, 'rc',
                               'CUSTOM_NIC')

        self._sync()

        inventories = self._inventories(self.pci_function.rp_uuid)
        self.assertEqual(['CUSTOM_NIC'], list(inventories))
        self.assertEqual(4, inventories['CUSTOM_NIC']['total'])

    def test_an_invalid_trait_in_the_database_is_left_out(self):
        records.make_attribute(self.context, self.pci_function, 'trait9',
                               'CUSTOM_PCI-VENDOR')
        logger = self.useFixture(fixtures.FakeLogger(
            name=placement_sync.__name__, level=logging.WARNING))

        self.assertTrue(self._sync())

        self.assertEqual({'OWNER_CYBORG', 'CUSTOM_PCI_PRODUCT_ID_1001'},
                         self._traits(self.pci_function.rp_uuid))
        self.assertIn("invalid trait 'CUSTOM_PCI-VENDOR'", logger.output)

    def test_a_generation_conflict_during_sync_is_retried(self):
        self._sync()
        device_queries.update(self.context, self.pci.uuid,
                              {'status': 'maintaining'})
        racing = recording.GenerationBumpingClient(
            self.placement.adapter, conf.CONF, bumps=1,
            rp_uuid=self.pci_function.rp_uuid)

        self.assertTrue(self._sync(racing))

        self.assertEqual(0, racing.bumps)
        inventory_url = ('/resource_providers/%s/inventories'
                         % self.pci_function.rp_uuid)
        self.assertEqual(2, racing.writes.count(('PUT', inventory_url)))
        self.assertEqual(4, self._inventories(self.pci_function.rp_uuid)[
            'CUSTOM_PCI']['reserved'])

    def test_unreachable_placement_is_logged_and_left_to_the_next_report(self):
        self.flags(group='placement', endpoint='http://127.0.0.1:9')
        logger = self.useFixture(fixtures.FakeLogger(
            name=placement_sync.__name__, level=logging.DEBUG))

        self.assertFalse(placement_sync.sync_host(
            self.context, placement_client.PlacementClient(conf.CONF), HOST))

        warnings = [line for line in logger.output.splitlines()
                    if 'not synced' in line]
        self.assertEqual(1, len(warnings), logger.output)
        self.assertIn('Resource providers of host %s not synced' % HOST,
                      warnings[0])
        self.assertIn('next inventory report', warnings[0])
        self.assertNotIn('Traceback', logger.output)

    def test_unconfigured_placement_is_logged_as_an_error_not_raised(self):
        # No auth plugin: the report that triggered the sync is already
        # committed, so the agent must not see a failure for it.
        self.flags(group='placement', auth_type=None)
        logger = self.useFixture(fixtures.FakeLogger(
            name=placement_sync.__name__, level=logging.DEBUG))

        self.assertFalse(placement_sync.sync_host(
            self.context, placement_client.PlacementClient(conf.CONF), HOST))

        errors = [line for line in logger.output.splitlines()
                  if 'not synced' in line]
        self.assertEqual(1, len(errors), logger.output)
        self.assertIn('[placement] options', errors[0])
        self.assertNotIn('Traceback', logger.output)

    def test_a_failed_sync_forgets_what_it_had_written(self):
        self._sync()
        device_queries.update(self.context, self.fpga.uuid,
                              {'status': 'maintaining'})
        # Placement is unreachable for one sync, then back.
        self.flags(group='placement', endpoint='http://127.0.0.1:9')
        self.client._adapter, working = (
            placement_client.PlacementClient(conf.CONF)._adapter,
            self.client._adapter)
        self.assertFalse(self._sync())
        self.client._adapter = working
        self.client.requests.clear()

        self.assertTrue(self._sync())

        self.assertEqual(1, self._inventories(self.region0.rp_uuid)[
            'FPGA']['reserved'])
        # Every provider was read again: nothing was trusted from before.
        self.assertEqual(2 + 3 * 2, len(self.client.requests)
                         - len(self.client.writes))

    def test_a_name_held_by_a_foreign_provider_raises_after_the_others(self):
        self.placement.adapter.post(
            '/resource_providers',
            json={'name': HOST + '_pci-0000:af:00.0',
                  'uuid': uuidutils.generate_uuid()})

        self.assertRaises(exception.ResourceProviderConflict, self._sync)

        self.assertEqual({HOST, HOST + '_fpga-0000:5e:00.0-region0',
                          HOST + '_fpga-0000:5e:00.0-region1'},
                         set(self._tree()))

    def test_a_placement_bug_of_ours_raises(self):
        # A resource class Placement refuses cannot come from the database
        # through the validation; a client that sends one is our bug.
        class BrokenClient(recording.RecordingClient):
            def ensure_resource_classes(self, names):
                super().ensure_resource_classes(['CUSTOM_bad'])

        error = self.assertRaises(exception.PlacementError, self._sync,
                                  BrokenClient(conf.CONF))
        self.assertIn('400', str(error))


class TestProviderSourcesQuery(PlacementSyncTestCase):

    def test_sources_of_a_host_in_two_statements_whatever_their_number(self):
        counts = []
        for extra in (0, 40):
            for _ in range(extra):
                self._deployable(self.pci, uuidutils.generate_uuid(), 1,
                                 'CUSTOM_PCI', ['CUSTOM_A', 'CUSTOM_B'])
            with test_list_statement_counts.counting_statements(
                    db_api.get_engine()) as statements:
                sources = placement_queries.provider_sources_of_host(
                    self.context, HOST)
            counts.append((len(sources), len(statements)))

        self.assertEqual([(4, 2), (44, 2)], counts)

    def test_sources_carry_the_newest_rc_and_the_traits_in_order(self):
        records.make_attribute(self.context, self.region0, 'rc', 'CUSTOM_X')
        records.make_attribute(self.context, self.region0, 'vendor', 'intel')

        sources = {source.deployable_name: source for source in
                   placement_queries.provider_sources_of_host(
                       self.context, HOST)}

        source = sources['fpga-0000:5e:00.0-region0']
        self.assertEqual(
            ('CUSTOM_X', ('CUSTOM_FPGA_INTEL', 'CUSTOM_FPGA_REGION_0'),
             self.fpga.uuid, 'enabled', 1, self.region0.rp_uuid),
            (source.resource_class, source.traits, source.device_uuid,
             source.device_status, source.num_accelerators, source.rp_uuid))
        self.assertEqual({'fpga-0000:5e:00.0-region0',
                          'fpga-0000:5e:00.0-region1', 'pci-0000:af:00.0',
                          'pci-0000:af:00.0-info'}, set(sources))
        self.assertIsNone(sources['pci-0000:af:00.0-info'].resource_class)


class TestSyncHostEdges(PlacementSyncTestCase):

    def test_a_stale_provider_with_allocations_is_kept_until_freed(self):
        self._sync()
        rp_uuid = self.region1.rp_uuid
        consumer = uuidutils.generate_uuid()
        response = self.placement.adapter.put(
            '/allocations/%s' % consumer,
            json={'allocations': {rp_uuid: {'resources': {'FPGA': 1}}},
                  'project_id': uuidutils.generate_uuid(),
                  'user_id': uuidutils.generate_uuid(),
                  'consumer_generation': None, 'consumer_type': 'INSTANCE'})
        self.assertEqual(204, response.status_code, response.text)
        deployable_queries.destroy(self.context, self.region1.uuid)
        logger = self.useFixture(fixtures.FakeLogger(
            name=placement_sync.__name__, level=logging.WARNING))

        self.assertTrue(self._sync())

        self.assertIsNotNone(self.client.get_provider(rp_uuid))
        self.assertIn('could not be deleted', logger.output)
        self.placement.adapter.delete('/allocations/%s' % consumer)
        self._sync()
        self.assertIsNone(self.client.get_provider(rp_uuid))

    def test_providers_of_a_card_removed_during_an_outage_are_deleted(self):
        # Placement goes away with its data, the card's rows are deleted
        # meanwhile, then Placement comes back: the next sync finds the
        # providers no deployable wants by comparing the two.
        self._sync()
        gone = {self.pci_function.rp_uuid}
        self.placement.stop()
        deployable_queries.destroy(self.context, self.pci_function.uuid)
        self.assertFalse(self._sync())
        self.placement.start()

        self.assertTrue(self._sync())

        self.assertEqual({HOST, HOST + '_fpga-0000:5e:00.0-region0',
                          HOST + '_fpga-0000:5e:00.0-region1'},
                         set(self._tree()))
        for rp_uuid in gone:
            self.assertIsNone(self.client.get_provider(rp_uuid))

    def test_an_outage_is_logged_outside_the_exception_handler(self):
        # oslo.log appends the exception being handled to a WARNING logged
        # inside an except block: the reason would be written twice.
        class HandledAtEmit(logging.Handler):
            def __init__(self):
                super().__init__(logging.WARNING)
                self.seen = []

            def emit(self, record):
                self.seen.append((record.getMessage(), sys.exc_info()[1]))

        handler = HandledAtEmit()
        logger = logging.getLogger(placement_sync.__name__)
        logger.addHandler(handler)
        self.addCleanup(logger.removeHandler, handler)
        self.placement.stop()

        self.assertFalse(self._sync())

        self.assertEqual(1, len(handler.seen), handler.seen)
        message, handled = handler.seen[0]
        self.assertIn('Placement cannot be reached', message)
        self.assertIsNone(handled)

    def test_a_placement_answering_503_counts_as_unreachable(self):
        endpoint = 'http://%s/placement' % uuidutils.generate_uuid()

        def unavailable(environ, start_response):
            start_response('503 Service Unavailable',
                           [('Content-Type', 'text/plain')])
            return [b'maintenance']

        intercept = interceptor.RequestsInterceptor(lambda: unavailable,
                                                    url=endpoint)
        intercept.install_intercept()
        self.addCleanup(intercept.uninstall_intercept)
        self.flags(group='placement', endpoint=endpoint)
        client = placement_client.PlacementClient(conf.CONF)

        self.assertRaises(exception.PlacementUnavailable,
                          client.get_provider_by_name, HOST)
        self.assertFalse(placement_sync.sync_host(self.context, client, HOST))
