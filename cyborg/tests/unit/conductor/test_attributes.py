"""attributes.create and delete against a SQLite database and the real Placement."""

from cyborg import exception
from cyborg import objects
from cyborg.conductor import attributes
from cyborg.tests.unit.conductor import test_placement_sync


class TestAttributes(test_placement_sync.PlacementSyncTestCase):

    def setUp(self):
        super().setUp()
        self._sync()
        self.client.requests.clear()

    def _create(self, key, value, deployable=None):
        deployable = deployable or self.pci_function
        return attributes.create(
            self.context, self.client,
            {'deployable_id': deployable.id, 'key': key, 'value': value})

    def test_create_a_trait_adds_it_to_the_provider(self):
        attribute = self._create('trait1', 'CUSTOM_PCI_VENDOR_ACME')

        self.assertIsInstance(attribute, objects.Attribute)
        self.assertEqual(('trait1', 'CUSTOM_PCI_VENDOR_ACME',
                          self.pci_function.id),
                         (attribute.key, attribute.value,
                          attribute.deployable_id))
        self.assertEqual(attribute.uuid, objects.Attribute.get_by_uuid(
            self.context, attribute.uuid).uuid)
        self.assertEqual({'OWNER_CYBORG', 'CUSTOM_PCI_PRODUCT_ID_1001',
                          'CUSTOM_PCI_VENDOR_ACME'},
                         self._traits(self.pci_function.rp_uuid))

    def test_create_an_rc_moves_the_inventory_to_the_new_class(self):
        self._create('rc', 'CUSTOM_NIC')

        inventories = self._inventories(self.pci_function.rp_uuid)
        self.assertEqual(['CUSTOM_NIC'], list(inventories))
        self.assertEqual((4, 4), (inventories['CUSTOM_NIC']['total'],
                                  inventories['CUSTOM_NIC']['max_unit']))
        # An rc is a resource class, never a trait.
        self.assertNotIn('CUSTOM_NIC', self._traits(
            self.pci_function.rp_uuid))

    def test_create_an_rc_on_a_deployable_without_one_makes_a_provider(self):
        records_deployable = self._deployable(
            self.pci, 'pci-0000:af:00.1', 2, None, [])

        self._create('rc', 'PGPU', deployable=records_deployable)

        provider = self._tree()[test_placement_sync.HOST
                                + '_pci-0000:af:00.1']
        self.assertEqual(records_deployable.rp_uuid, provider['uuid'])
        self.assertEqual(2, self._inventories(provider['uuid'])[
            'PGPU']['total'])

    def test_create_another_key_does_not_touch_placement(self):
        attribute = self._create('vendor', 'acme')

        self.assertEqual('vendor', attribute.key)
        self.assertEqual([], self.client.requests)

    def test_delete_a_trait_removes_it_from_that_provider_only(self):
        attribute = self._create('trait1', 'CUSTOM_FPGA_INTEL',
                                 deployable=self.pci_function)
        self.assertIn('CUSTOM_FPGA_INTEL',
                      self._traits(self.pci_function.rp_uuid))

        attributes.delete(self.context, self.client, attribute.uuid)

        self.assertNotIn('CUSTOM_FPGA_INTEL',
                         self._traits(self.pci_function.rp_uuid))
        # The regions still carry it, and the trait still exists.
        self.assertIn('CUSTOM_FPGA_INTEL', self._traits(self.region0.rp_uuid))
        response = self.placement.adapter.get('/traits/CUSTOM_FPGA_INTEL')
        self.assertEqual(204, response.status_code)
        self.assertEqual([], [request for request in self.client.writes
                              if request[0] == 'DELETE'])
        self.assertRaises(exception.ResourceNotFound,
                          objects.Attribute.get_by_uuid, self.context,
                          attribute.uuid)

    def test_delete_the_rc_deletes_the_provider(self):
        rc = objects.Attribute.list(self.context, filters={
            'deployable_id': self.pci_function.id, 'key': 'rc'})[0]

        attributes.delete(self.context, self.client, rc.uuid)

        self.assertIsNone(self.client.get_provider(self.pci_function.rp_uuid))

    def test_delete_an_unknown_attribute_is_not_found(self):
        self.assertRaises(exception.ResourceNotFound, attributes.delete,
                          self.context, self.client,
                          '7d0c1ed6-44f5-4e07-9cbe-2d7b6c1d0c6b')

    def test_create_for_an_unknown_deployable_is_not_found(self):
        error = self.assertRaises(
            exception.ResourceNotFound, attributes.create, self.context,
            self.client, {'deployable_id': 99999, 'key': 'k', 'value': 'v'})
        self.assertEqual(404, error.code)

    def test_create_refuses_missing_or_malformed_values(self):
        cases = [
            {'key': 'k', 'value': 'v'},
            {'deployable_id': '1', 'key': 'k', 'value': 'v'},
            {'deployable_id': self.pci_function.id, 'value': 'v'},
            {'deployable_id': self.pci_function.id, 'key': '', 'value': 'v'},
            {'deployable_id': self.pci_function.id, 'key': 'k', 'value': 3},
            {'deployable_id': self.pci_function.id, 'key': 'k', 'value': 'v',
             'color': 'blue'},
            {'deployable_id': self.pci_function.id, 'key': 'rc',
             'value': 'fpga'},
            {'deployable_id': self.pci_function.id, 'key': 'trait2',
             'value': 'CUSTOM_PCI-ACME'},
        ]
        for values in cases:
            error = self.assertRaises(exception.Invalid, attributes.create,
                                      self.context, self.client, values)
            self.assertEqual(400, error.code, values)
        # Still the rc and the trait the deployable was made with.
        self.assertEqual(2, len(objects.Attribute.list(
            self.context, filters={'deployable_id': self.pci_function.id})))
