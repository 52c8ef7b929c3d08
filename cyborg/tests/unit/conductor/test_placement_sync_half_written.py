"""placement_sync and the providers a failed sync leaves half-written.

Creating a provider and marking it OWNER_CYBORG are two requests (issue
13): these tests leave a provider between the two, as Placement failing at
that moment does, and check what the next sync of the host does with it,
and that other services' providers in the tree are left alone.
"""

import logging

import fixtures
from oslo_utils import uuidutils

from cyborg import conf
from cyborg.conductor import placement_sync
from cyborg.db.queries import deployables as deployable_queries
from cyborg.db.queries import devices as device_queries
from cyborg.tests.unit.clients import recording
from cyborg.tests.unit.conductor import test_placement_sync
from cyborg.tests.unit.db import records

HOST = test_placement_sync.HOST
NEW_CARD = 'pci-0000:b0:00.0'
ONLY_LOOKUPS = [('GET', '/resource_providers'), ('GET', '/resource_providers')]


class OutageAfterCreateClient(recording.RecordingClient):
    """Placement goes away right after it has answered a provider's POST."""

    def __init__(self, placement, config):
        super().__init__(config)
        self._placement = placement

    def create_provider(self, uuid, name, parent_uuid=None):
        created = super().create_provider(uuid, name, parent_uuid=parent_uuid)
        self._placement.stop()
        return created


class TestHalfWrittenProviders(test_placement_sync.PlacementSyncTestCase):
    """The host's three providers are in step; then a new card is reported."""

    def setUp(self):
        super().setUp()
        self.assertTrue(self._sync())
        self.root_uuid = self._compute_node()['uuid']
        self.in_step = set(self._tree())
        self.card_device = records.make_device(self.context, hostname=HOST,
                                               type='AICHIP')
        # Its provider uuid derived from host and name, as a report gives.
        self.card = self._deployable(
            self.card_device, NEW_CARD, 1, 'CUSTOM_PCI',
            ['CUSTOM_PCI_PRODUCT_ID_1001'],
            rp_uuid=placement_sync.provider_uuid(HOST, NEW_CARD))

    def _child(self, name, rp_uuid=None, parent_uuid=None):
        """A provider as its POST leaves it: generation 0, nothing on it."""
        response = self.placement.adapter.post('/resource_providers', json={
            'name': name, 'uuid': rp_uuid or uuidutils.generate_uuid(),
            'parent_provider_uuid': parent_uuid or self.root_uuid})
        self.assertEqual(200, response.status_code, response.text)
        return response.json()['uuid']

    def _put(self, rp_uuid, what, body):
        generation = self._get('/resource_providers/%s' % rp_uuid)[
            'generation']
        response = self.placement.adapter.put(
            '/resource_providers/%s/%s' % (rp_uuid, what),
            json=dict(body, resource_provider_generation=generation))
        self.assertEqual(200, response.status_code, response.text)

    def _sync_recorded(self):
        """Sync with the test's client; the requests that sync sent."""
        self.client.requests.clear()
        self.assertTrue(self._sync())
        return list(self.client.requests)

    def _assert_complete(self, rp_uuid):
        self.assertEqual({'OWNER_CYBORG', 'CUSTOM_PCI_PRODUCT_ID_1001'},
                         self._traits(rp_uuid))
        record = self._inventories(rp_uuid)['CUSTOM_PCI']
        self.assertEqual((1, 1, 0), (record['total'], record['max_unit'],
                                     record['reserved']))

    def test_placement_lost_between_create_and_traits_then_card_removed(self):
        failing = OutageAfterCreateClient(self.placement, conf.CONF)
        self.assertFalse(self._sync(failing))
        self.placement.start()
        provider = self.client.get_provider(self.card.rp_uuid)
        self.assertEqual((HOST + '_' + NEW_CARD, 0, self.root_uuid),
                         (provider['name'], provider['generation'],
                          provider['parent_provider_uuid']))
        self.assertEqual(set(), self._traits(self.card.rp_uuid))
        # The card is removed before Placement sees another sync.
        device_queries.destroy(self.context, self.card_device.uuid)

        requests = self._sync_recorded()

        self.assertIsNone(self.client.get_provider(self.card.rp_uuid))
        self.assertEqual(self.in_step, set(self._tree()))
        # The tree listing shows it: no request per provider to find it.
        self.assertEqual(ONLY_LOOKUPS + [
            ('DELETE', '/resource_providers/%s' % self.card.rp_uuid)],
            requests)

    def test_placement_lost_between_create_and_traits_is_completed(self):
        failing = OutageAfterCreateClient(self.placement, conf.CONF)
        self.assertFalse(self._sync(failing))
        self.placement.start()

        requests = self._sync_recorded()

        self._assert_complete(self.card.rp_uuid)
        self.assertEqual(self.in_step | {HOST + '_' + NEW_CARD},
                         set(self._tree()))
        self.assertNotIn(('POST', '/resource_providers'), requests)
        self.assertEqual(ONLY_LOOKUPS, self._sync_recorded())

    def test_a_half_written_provider_of_a_vanished_deployable_is_deleted(self):
        self._child(HOST + '_' + NEW_CARD, self.card.rp_uuid)
        deployable_queries.destroy(self.context, self.card.uuid)
        logger = self.useFixture(fixtures.FakeLogger(
            name=placement_sync.__name__, level=logging.INFO))

        self._sync_recorded()

        self.assertIsNone(self.client.get_provider(self.card.rp_uuid))
        self.assertEqual(self.in_step, set(self._tree()))
        self.assertIn('did not mark OWNER_CYBORG', logger.output)

    def test_a_half_written_provider_still_wanted_is_completed(self):
        self._child(HOST + '_' + NEW_CARD, self.card.rp_uuid)

        requests = self._sync_recorded()

        self._assert_complete(self.card.rp_uuid)
        self.assertNotIn(('POST', '/resource_providers'), requests)

    def test_a_half_written_provider_gives_its_name_to_the_new_one(self):
        # The card's rows were written again with a random rp_uuid (the
        # derived one was still held by a kept row) after a sync had
        # created the provider of the old ones under the same name.
        left = self.card.rp_uuid
        self._child(HOST + '_' + NEW_CARD, left)
        self.card.rp_uuid = uuidutils.generate_uuid()
        self.card.save(self.context)

        requests = self._sync_recorded()

        self.assertIsNone(self.client.get_provider(left))
        self._assert_complete(self.card.rp_uuid)
        self.assertLess(requests.index(('DELETE', '/resource_providers/%s'
                                        % left)),
                        requests.index(('POST', '/resource_providers')))

    def test_a_wanted_provider_outside_the_tree_is_kept_in_step_there(self):
        # _create's conflict path: the uuid exists, as a root of its own.
        self.client.create_provider(self.card.rp_uuid, HOST + '_' + NEW_CARD)
        logger = self.useFixture(fixtures.FakeLogger(
            name=placement_sync.__name__, level=logging.WARNING))

        self._sync_recorded()

        self._assert_complete(self.card.rp_uuid)
        self.assertIsNone(self.client.get_provider(self.card.rp_uuid)[
            'parent_provider_uuid'])
        self.assertIn('is not a child of the compute node', logger.output)

    def test_other_services_providers_in_the_tree_are_left_alone(self):
        # Nova's vGPU child: a cyborg-like name, but inventory on it.
        nova_vgpu = self._child(HOST + '_pci_0000_3b_00_0')
        self._put(nova_vgpu, 'inventories',
                  {'inventories': {'VGPU': {'total': 4}}})
        # A trait and nothing else.
        with_trait = self._child(HOST + '_pci-0000:3c:00.0')
        self._put(with_trait, 'traits', {'traits': ['HW_GPU_API_VULKAN']})
        # Empty, but: another service's name shape (Neutron's), a name
        # that is no deployable's, another host's prefix, not a child of
        # the compute node.
        agent = self._child(HOST + ':Open vSwitch agent')
        empty = [agent, self._child(HOST + '_Open vSwitch agent'),
                 self._child(HOST + '0_pci-0000:3d:00.0'),
                 self._child(HOST + '_pci-0000:3e:00.0', parent_uuid=agent)]
        # A stale provider of cyborg's goes in the same sync.
        deployable_queries.destroy(self.context, self.region1.uuid)
        deployable_queries.destroy(self.context, self.card.uuid)

        requests = self._sync_recorded()

        for rp_uuid in [nova_vgpu, with_trait] + empty:
            self.assertIsNotNone(self.client.get_provider(rp_uuid), rp_uuid)
        self.assertEqual({'VGPU'}, set(self._inventories(nova_vgpu)))
        self.assertEqual(set(), self._traits(agent))
        self.assertIsNone(self.client.get_provider(self.region1.rp_uuid))
        # Providers that may be marked: one listing of the marked ones.
        self.assertEqual(ONLY_LOOKUPS + [
            ('GET', '/resource_providers'),
            ('DELETE', '/resource_providers/%s' % self.region1.rp_uuid)],
            requests)
        # Found foreign, they cost nothing more while they do not change.
        self.assertEqual(ONLY_LOOKUPS, self._sync_recorded())

    def test_an_empty_provider_named_like_a_deployable_is_proved_by_uuid(self):
        # Nova's vGPU child between its POST and its first write: named
        # like a deployable, generation 0, but a uuid not derived.
        nova_shell = self._child(HOST + '_pci_0000_3b_00_0')

        self._sync_recorded()

        self.assertIsNotNone(self.client.get_provider(nova_shell))

    def test_a_foreign_provider_that_changes_is_checked_again(self):
        deployable_queries.destroy(self.context, self.card.uuid)
        foreign = self._child(HOST + '_pci_0000_3b_00_0')
        self._put(foreign, 'inventories',
                  {'inventories': {'VGPU': {'total': 4}}})
        self.assertEqual(3, len(self._sync_recorded()))
        self.assertEqual(ONLY_LOOKUPS, self._sync_recorded())
        # Marked as cyborg's (a provider of a deployable long gone).
        self._put(foreign, 'traits', {'traits': ['OWNER_CYBORG']})

        requests = self._sync_recorded()

        self.assertIsNone(self.client.get_provider(foreign))
        self.assertIn(('DELETE', '/resource_providers/%s' % foreign),
                      requests)
