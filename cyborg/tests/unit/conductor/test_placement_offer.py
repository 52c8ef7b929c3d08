"""What Placement is offered of a host: health and drain reserve the
inventory (real openstack-placement, SQLite)."""

from cyborg.common import vocabulary
from cyborg.db.queries import deployables as deployable_queries
from cyborg.db.queries import devices as device_queries
from cyborg.db.queries import health as health_queries
from cyborg.tests.unit.conductor import test_placement_sync

Health = vocabulary.Health


class TestOffer(test_placement_sync.PlacementSyncTestCase):

    def _reserved(self):
        """{deployable name: reserved} of the host's three providers."""
        return {deployable.name: self._inventories(deployable.rp_uuid)[
                    'CUSTOM_PCI' if deployable is self.pci_function
                    else 'FPGA']['reserved']
                for deployable in (self.region0, self.region1,
                                   self.pci_function)}

    def _assert_reserved(self, region0, region1, pci):
        self.assertEqual({self.region0.name: region0,
                          self.region1.name: region1,
                          self.pci_function.name: pci}, self._reserved())

    def test_everything_is_offered_by_default(self):
        self._sync()
        self._assert_reserved(0, 0, 0)

    def test_an_unhealthy_device_is_not_offered_until_healthy(self):
        self._sync()
        for health in (Health.DEGRADED, Health.FAILED):
            health_queries.set_device_health(self.context, self.fpga.id,
                                             health, 'AER fatal')
            self._sync()
            self._assert_reserved(1, 1, 0)
        health_queries.set_device_health(self.context, self.fpga.id,
                                         Health.HEALTHY)
        self._sync()
        self._assert_reserved(0, 0, 0)

    def test_an_unhealthy_region_alone_is_not_offered(self):
        self._sync()
        health_queries.set_deployable_health(
            self.context, self.region1.id, Health.DEGRADED, 'readback')
        self._sync()
        self._assert_reserved(0, 1, 0)

    def test_a_drained_region_or_device_is_not_offered(self):
        self._sync()
        deployable_queries.update(self.context, self.region0.uuid,
                                  {'drain_since': self.region0.created_at})
        self._sync()
        self._assert_reserved(1, 0, 0)
        device_queries.update(self.context, self.pci.uuid,
                              {'drain_since': self.pci.created_at})
        self._sync()
        self._assert_reserved(1, 0, 4)

    def test_a_drained_or_unhealthy_root_takes_its_regions_out(self):
        root = self._deployable(self.fpga, 'fpga-root', 0, None, [])
        for region in (self.region0, self.region1):
            deployable_queries.update(self.context, region.uuid,
                                      {'parent_id': root.id,
                                       'root_id': root.id})
        self._sync()
        self._assert_reserved(0, 0, 0)
        deployable_queries.update(self.context, root.uuid,
                                  {'drain_since': root.created_at})
        self._sync()
        self._assert_reserved(1, 1, 0)
        deployable_queries.update(self.context, root.uuid,
                                  {'drain_since': None})
        health_queries.set_deployable_health(self.context, root.id,
                                             Health.FAILED, 'gone')
        self._sync()
        self._assert_reserved(1, 1, 0)


class TestHealthWriter(test_placement_sync.PlacementSyncTestCase):

    def test_a_change_sets_since_and_restarts_the_count(self):
        device_queries.update(self.context, self.fpga.uuid,
                              {'healthy_reports': 2})
        self.assertTrue(health_queries.set_device_health(
            self.context, self.fpga.id, Health.DEGRADED, 'AER non-fatal'))
        row = device_queries.get_by_id(self.context, self.fpga.id)
        self.assertEqual((Health.DEGRADED, 'AER non-fatal', 0),
                         (row.health, row.health_reason,
                          row.healthy_reports))
        self.assertIsNotNone(row.health_since)
        since = row.health_since

        self.assertFalse(health_queries.set_device_health(
            self.context, self.fpga.id, Health.DEGRADED, 'again'))
        row = device_queries.get_by_id(self.context, self.fpga.id)
        self.assertEqual(('again', since), (row.health_reason,
                                            row.health_since))

    def test_a_long_reason_is_cut_to_the_column(self):
        health_queries.set_deployable_health(
            self.context, self.region0.id, Health.FAILED, 'x' * 1000)
        row, _ = deployable_queries.get_by_uuid(self.context,
                                                self.region0.uuid)
        reason = row.health_reason
        self.assertEqual(255, len(reason))
        self.assertTrue(reason.endswith('...'))
