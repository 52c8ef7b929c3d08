"""devices.set_status against a SQLite database and the real Placement."""

from oslo_utils import uuidutils

from cyborg import conf
from cyborg import exception
from cyborg import objects
from cyborg.conductor import devices
from cyborg.tests.unit.clients import recording
from cyborg.tests.unit.conductor import test_placement_sync

HOST = test_placement_sync.HOST


class TestSetStatus(test_placement_sync.PlacementSyncTestCase):

    def setUp(self):
        super().setUp()
        self._sync()

    def _allocate(self, rp_uuid, resource_class, amount):
        consumer = uuidutils.generate_uuid()
        response = self.placement.adapter.put(
            '/allocations/%s' % consumer,
            json={'allocations': {rp_uuid: {'resources': {
                      resource_class: amount}}},
                  'project_id': uuidutils.generate_uuid(),
                  'user_id': uuidutils.generate_uuid(),
                  'consumer_generation': None,
                  'consumer_type': 'INSTANCE'})
        self.assertEqual(204, response.status_code, response.text)
        return consumer

    def test_disable_reserves_every_provider_of_the_device(self):
        device = devices.set_status(self.context, self.client,
                                    self.fpga.uuid, 'maintaining',
                                    'firmware update')

        self.assertIsInstance(device, objects.Device)
        self.assertEqual(('maintaining', 'firmware update'),
                         (device.status, device.status_reason))
        stored = objects.Device.get_by_uuid(self.context, self.fpga.uuid)
        self.assertEqual(('maintaining', 'firmware update'),
                         (stored.status, stored.status_reason))
        for deployable in (self.region0, self.region1):
            self.assertEqual(
                {'FPGA': {'total': 1, 'reserved': 1, 'max_unit': 1,
                          'min_unit': 1, 'step_size': 1,
                          'allocation_ratio': 1.0}},
                self._inventories(deployable.rp_uuid))
        # The other device of the host stays free.
        self.assertEqual(0, self._inventories(self.pci_function.rp_uuid)[
            'CUSTOM_PCI']['reserved'])

    def test_enable_frees_the_inventory_and_clears_the_reason(self):
        devices.set_status(self.context, self.client, self.pci.uuid,
                           'maintaining', 'broken fan')

        device = devices.set_status(self.context, self.client,
                                    self.pci.uuid, 'enabled', 'ignored')

        self.assertEqual(('enabled', None),
                         (device.status, device.status_reason))
        record = self._inventories(self.pci_function.rp_uuid)['CUSTOM_PCI']
        self.assertEqual((4, 4, 0), (record['total'], record['max_unit'],
                                     record['reserved']))

    def test_disable_keeps_other_inventory_fields_and_allocations(self):
        rp_uuid = self.pci_function.rp_uuid
        generation = self._get('/resource_providers/%s' % rp_uuid)[
            'generation']
        response = self.placement.adapter.put(
            '/resource_providers/%s/inventories' % rp_uuid,
            json={'resource_provider_generation': generation,
                  'inventories': {'CUSTOM_PCI': {
                      'total': 4, 'max_unit': 4, 'step_size': 2,
                      'allocation_ratio': 1.5}}})
        self.assertEqual(200, response.status_code, response.text)
        consumer = self._allocate(rp_uuid, 'CUSTOM_PCI', 2)

        devices.set_status(self.context, self.client, self.pci.uuid,
                           'maintaining', None)

        record = self._inventories(rp_uuid)['CUSTOM_PCI']
        self.assertEqual((4, 4, 4, 2, 1.5),
                         (record['total'], record['reserved'],
                          record['max_unit'], record['step_size'],
                          record['allocation_ratio']))
        allocations = self._get('/allocations/%s' % consumer)['allocations']
        self.assertEqual({'CUSTOM_PCI': 2},
                         allocations[rp_uuid]['resources'])

    def test_setting_the_same_status_again_changes_nothing(self):
        devices.set_status(self.context, self.client, self.fpga.uuid,
                           'maintaining', 'tests')
        self.client.requests.clear()

        device = devices.set_status(self.context, self.client,
                                    self.fpga.uuid, 'maintaining', 'tests')

        self.assertEqual('maintaining', device.status)
        self.assertEqual([], self.client.writes)

    def test_an_unknown_status_is_invalid(self):
        error = self.assertRaises(exception.Invalid, devices.set_status,
                                  self.context, self.client, self.fpga.uuid,
                                  'disabled', None)
        self.assertIn("'disabled'", str(error))
        self.assertEqual('enabled', objects.Device.get_by_uuid(
            self.context, self.fpga.uuid).status)

    def test_a_too_long_reason_is_invalid(self):
        self.assertRaises(exception.Invalid, devices.set_status,
                          self.context, self.client, self.fpga.uuid,
                          'maintaining', 'x' * 256)

    def test_an_unknown_device_is_not_found(self):
        error = self.assertRaises(exception.ResourceNotFound,
                                  devices.set_status, self.context,
                                  self.client, uuidutils.generate_uuid(),
                                  'maintaining', None)
        self.assertEqual(404, error.code)

    def test_the_status_is_kept_when_placement_is_down(self):
        self.flags(group='placement', endpoint='http://127.0.0.1:9')
        unreachable = recording.RecordingClient(conf.CONF)

        device = devices.set_status(self.context, unreachable,
                                    self.fpga.uuid, 'maintaining', 'down')

        self.assertEqual('maintaining', device.status)
        self.assertEqual('maintaining', objects.Device.get_by_uuid(
            self.context, self.fpga.uuid).status)
        # The next sync (the host's next report) catches up.
        self._sync()
        self.assertEqual(1, self._inventories(self.region0.rp_uuid)[
            'FPGA']['reserved'])
