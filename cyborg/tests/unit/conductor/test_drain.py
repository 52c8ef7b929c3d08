"""drain.set_drain against a SQLite database and the real Placement."""

from oslo_context import context as oslo_context
from oslo_utils import uuidutils

from cyborg import context as cyborg_context
from cyborg import exception
from cyborg import objects
from cyborg.conductor import drain
from cyborg.db.queries import history as history_queries
from cyborg.tests.unit.conductor import test_placement_sync


class TestSetDrain(test_placement_sync.PlacementSyncTestCase):

    def setUp(self):
        super().setUp()
        self._sync()
        self.caller = cyborg_context.RequestContext(
            user_id='operator', project_id='admin-project',
            request_id=oslo_context.generate_request_id(), is_admin=True)

    def _reserved(self):
        """[reserved] of region0, region1 and the PCI function."""
        return [self._inventories(self.region0.rp_uuid)['FPGA']['reserved'],
                self._inventories(self.region1.rp_uuid)['FPGA']['reserved'],
                self._inventories(self.pci_function.rp_uuid)[
                    'CUSTOM_PCI']['reserved']]

    def _history(self, **uuid):
        return [(entry.event, entry.outcome, entry.reason, entry.user_id,
                 entry.project_id, entry.request_id, entry.device_uuid,
                 entry.deployable_uuid)
                for entry in history_queries.page(self.context, **uuid)]

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

    def test_a_drained_region_alone_leaves_the_offer(self):
        self.assertTrue(drain.set_drain(self.caller, self.client,
                                        'deployable', self.region0.uuid,
                                        True, 'replace the card'))

        self.assertEqual([1, 0, 0], self._reserved())
        stored = objects.Deployable.get_by_uuid(self.context,
                                                self.region0.uuid)
        self.assertIsNotNone(stored.drain_since)
        entry = ('drain', 'ok', 'replace the card', 'operator',
                 'admin-project', self.caller.request_id, self.fpga.uuid,
                 self.region0.uuid)
        self.assertEqual([entry], self._history(
            deployable_uuid=self.region0.uuid))
        # The device's history holds its regions' entries too.
        self.assertEqual([entry], self._history(device_uuid=self.fpga.uuid))

    def test_a_drained_device_takes_its_regions_out(self):
        drain.set_drain(self.caller, self.client, 'device', self.fpga.uuid,
                        True)

        self.assertEqual([1, 1, 0], self._reserved())
        self.assertEqual(
            [('drain', 'ok', None, 'operator', 'admin-project',
              self.caller.request_id, self.fpga.uuid, None)],
            self._history(device_uuid=self.fpga.uuid))

    def test_draining_twice_keeps_the_first_time_and_entry(self):
        drain.set_drain(self.caller, self.client, 'device', self.pci.uuid,
                        True)
        first = objects.Device.get_by_uuid(self.context,
                                           self.pci.uuid).drain_since

        self.assertFalse(drain.set_drain(self.caller, self.client, 'device',
                                         self.pci.uuid, True, 'again'))

        self.assertEqual(first, objects.Device.get_by_uuid(
            self.context, self.pci.uuid).drain_since)
        self.assertEqual(['drain'], [entry[0] for entry in self._history(
            device_uuid=self.pci.uuid)])
        self.assertEqual([0, 0, 4], self._reserved())

    def test_undrain_restores_the_offer(self):
        drain.set_drain(self.caller, self.client, 'deployable',
                        self.region1.uuid, True)

        self.assertTrue(drain.set_drain(self.caller, self.client,
                                        'deployable', self.region1.uuid,
                                        False, 'card replaced'))

        self.assertEqual([0, 0, 0], self._reserved())
        self.assertIsNone(objects.Deployable.get_by_uuid(
            self.context, self.region1.uuid).drain_since)
        self.assertEqual(['undrain', 'drain'], [entry[0] for entry in
                                                self._history(
            deployable_uuid=self.region1.uuid)])

    def test_undrain_of_an_undrained_one_changes_nothing(self):
        self.assertFalse(drain.set_drain(self.caller, self.client, 'device',
                                         self.fpga.uuid, False))
        self.assertEqual([], self._history(device_uuid=self.fpga.uuid))
        self.assertEqual([0, 0, 0], self._reserved())

    def test_allocations_stay_as_they_are(self):
        rp_uuid = self.pci_function.rp_uuid
        consumer = self._allocate(rp_uuid, 'CUSTOM_PCI', 2)

        def allocated():
            return {rp: allocation['resources'] for rp, allocation in
                    self._get('/allocations/%s' % consumer)[
                        'allocations'].items()}
        self.assertEqual({rp_uuid: {'CUSTOM_PCI': 2}}, allocated())

        drain.set_drain(self.caller, self.client, 'deployable',
                        self.pci_function.uuid, True)

        self.assertEqual({rp_uuid: {'CUSTOM_PCI': 2}}, allocated())
        record = self._inventories(rp_uuid)['CUSTOM_PCI']
        self.assertEqual((4, 4), (record['total'], record['reserved']))

    def test_an_unknown_uuid_is_not_found_and_nothing_changes(self):
        for kind in ('device', 'deployable'):
            self.assertRaises(exception.ResourceNotFound, drain.set_drain,
                              self.caller, self.client, kind,
                              uuidutils.generate_uuid(), True)
            self.assertRaises(exception.ResourceNotFound, drain.set_drain,
                              self.caller, self.client, kind, 'a\x00b',
                              True)
        self.assertEqual([0, 0, 0], self._reserved())

    def test_a_bad_reason_or_kind_is_refused_before_any_change(self):
        for reason in ('', 'x' * 256, 42):
            self.assertRaises(exception.Invalid, drain.set_drain,
                              self.caller, self.client, 'device',
                              self.fpga.uuid, True, reason)
        self.assertRaises(exception.Invalid, drain.set_drain, self.caller,
                          self.client, 'host', self.fpga.uuid, True)
        self.assertIsNone(objects.Device.get_by_uuid(
            self.context, self.fpga.uuid).drain_since)
        self.assertEqual([], self._history(device_uuid=self.fpga.uuid))
