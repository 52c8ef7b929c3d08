"""Imported deployables keep upstream's resource providers, with real Placement.

Placement holds what OpenStack Cyborg made for a host: providers named
after upstream's deployables (``<host>_<pci address>``) with uuid3 uuids,
their resource classes, traits and inventory, and a Nova allocation
against the FPGA's. After the import, a report of this service's fake
driver with the same PCI addresses (other deployable names) and a sync
must neither create nor delete a provider, leave the allocation where it
is, and keep the imported deployables, their handles and ARQs.
"""

import os

import fixtures
import sqlalchemy as sa
from oslo_utils import uuidutils

from cyborg import conf
from cyborg import context as cyborg_context
from cyborg.agent.drivers import base as driver_base
from cyborg.agent.drivers import fake_inventory
from cyborg.clients import placement as placement_client
from cyborg.conductor import inventory_report
from cyborg.conductor import placement_sync
from cyborg.db import models
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.fixtures import placement as placement_fixture
from cyborg.tests.fixtures import upstream_cyborg
from cyborg.tests.functional.db import upstream_sample
from cyborg.upstream import importing

HOST = 'compute-1'
# This service's fake driver: an FPGA on bus 10 whose region has the two
# VFs upstream's FPGA deployable had, and a GPU on bus 11.
INVENTORY = '''
fpgas:
  - count: 1
    regions: [{pfs: 1, vfs_per_pf: 2}]
gpus:
  - count: 1
'''


class AdoptUpstreamProvidersTest(base.TestCase):

    def setUp(self):
        super().setUp()
        upstream = self.useFixture(upstream_cyborg.UpstreamDatabase())
        self.sample = upstream_sample.fill(upstream, HOST, third_type=None)
        self.target = self.useFixture(database.Database('mysql'))
        self.placement = self.useFixture(placement_fixture.PlacementFixture())
        self.client = placement_client.PlacementClient(conf.CONF)
        self.context = cyborg_context.get_admin_context()
        self.compute_node = self._provider(HOST)
        self._upstream_providers()
        importing.run(upstream.url, out=lambda line: None)

    # Placement as upstream left it.

    def _call(self, method, url, body=None, expected=(200, 204)):
        response = self.placement.adapter.request(url, method, json=body)
        self.assertIn(response.status_code, expected, response.text)
        return response.json() if response.text else None

    def _provider(self, name, rp_uuid=None, parent=None):
        rp_uuid = rp_uuid or uuidutils.generate_uuid()
        self._call('POST', '/resource_providers', {
            'name': name, 'uuid': rp_uuid, 'parent_provider_uuid': parent})
        return rp_uuid

    def _upstream_providers(self):
        sample = self.sample
        for name, rp_uuid, resource_class, total, traits in (
                (sample.fpga_name, sample.fpga_rp, 'FPGA', 2,
                 upstream_sample.FPGA_TRAITS),
                (sample.gpu_name, sample.gpu_rp, 'PGPU', 1,
                 upstream_sample.GPU_TRAITS)):
            self._provider(name, rp_uuid, self.compute_node)
            self._call('PUT', '/resource_providers/%s/inventories' % rp_uuid,
                       {'resource_provider_generation': 0, 'inventories': {
                           resource_class: {'total': total,
                                            'max_unit': total}}})
            for trait in traits:
                self._call('PUT', '/traits/%s' % trait, expected=(201, 204))
            self._call('PUT', '/resource_providers/%s/traits' % rp_uuid,
                       {'resource_provider_generation': 1,
                        'traits': list(traits)})
        self.consumer = sample.uuids['instance']
        self._call('PUT', '/allocations/%s' % self.consumer, {
            'allocations': {sample.fpga_rp: {'resources': {'FPGA': 1}}},
            'project_id': 'project-a', 'user_id': 'user-a',
            'consumer_generation': None, 'consumer_type': 'INSTANCE'})

    # Reading Placement and the database.

    def _providers(self):
        return {(provider['uuid'], provider['name'])
                for provider in self._call('GET', '/resource_providers')[
                    'resource_providers']}

    def _inventory(self, rp_uuid):
        return {resource_class: (record['total'], record['reserved'])
                for resource_class, record in self._call(
                    'GET', '/resource_providers/%s/inventories' % rp_uuid)[
                    'inventories'].items()}

    def _traits(self, rp_uuid):
        return set(self._call('GET', '/resource_providers/%s/traits'
                              % rp_uuid)['traits'])

    def _deployables(self):
        with self.target.engine.connect() as connection:
            return {row.uuid: row for row in connection.execute(
                sa.select(models.Deployable))}

    def _report_and_sync(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'inventory.yaml')
        with open(path, 'w') as out:
            out.write(INVENTORY)
        devices = fake_inventory.build_devices(
            fake_inventory.load_inventory(path, HOST))
        inventory_report.apply(self.context, HOST, [
            driver_base.device_to_primitive(device, 'fake')
            for device in devices])
        self.assertTrue(placement_sync.sync_host(self.context, self.client,
                                                 HOST))

    def test_report_adopts_upstream_providers(self):
        providers = self._providers()
        self._report_and_sync()

        self.assertEqual(providers, self._providers())
        allocations = self._call('GET', '/allocations/%s' % self.consumer)
        self.assertEqual({self.sample.fpga_rp: {'FPGA': 1}},
                         {rp_uuid: allocation['resources'] for
                          rp_uuid, allocation in
                          allocations['allocations'].items()})
        self.assertEqual({'FPGA': (2, 0)}, self._inventory(self.sample.fpga_rp))
        # The GPU was disabled upstream: all of it reserved.
        self.assertEqual({'PGPU': (1, 1)}, self._inventory(self.sample.gpu_rp))
        fpga_traits = self._traits(self.sample.fpga_rp)
        self.assertLessEqual(set(upstream_sample.FPGA_TRAITS) |
                             {'OWNER_CYBORG'}, fpga_traits)
        self.assertLessEqual(set(upstream_sample.GPU_TRAITS) |
                             {'OWNER_CYBORG'},
                             self._traits(self.sample.gpu_rp))

        deployables = self._deployables()
        uuids = self.sample.uuids
        fpga = deployables[uuids['fpga_dep']]
        self.assertEqual(('fpga-0000:10:00.0-region0', self.sample.fpga_rp,
                          self.sample.fpga_name),
                         (fpga.name, fpga.rp_uuid, fpga.provider_name))
        gpu = deployables[uuids['gpu_dep']]
        self.assertEqual(('gpu-0000:11:00.0', None, self.sample.gpu_rp),
                         (gpu.name, gpu.parent_id, gpu.rp_uuid))
        # Upstream's GPU root has no counterpart: removed as unreported.
        self.assertNotIn(uuids['gpu_root'], deployables)
        self._assert_handles_and_arq(fpga)

        # In step: a second report and sync change nothing.
        generations = self._call('GET', '/resource_providers')
        self._report_and_sync()
        self.assertEqual(generations, self._call('GET',
                                                 '/resource_providers'))

    def _assert_handles_and_arq(self, fpga):
        handles, arqs = models.AttachHandle.__table__, models.ARQ.__table__
        uuids = self.sample.uuids
        with self.target.engine.connect() as connection:
            held = dict(connection.execute(sa.select(
                handles.c.uuid, handles.c.deployable_id)).all())
            bound = connection.execute(sa.select(arqs).where(
                arqs.c.uuid == uuids['bound'])).one()
        self.assertEqual(fpga.id, held[uuids['fpga_ah0']])
        self.assertEqual(fpga.id, held[uuids['fpga_ah1']])
        self.assertEqual((fpga.id, 'Bound', self.sample.fpga_rp),
                         (bound.deployable_id, bound.state,
                          bound.device_rp_uuid))
        self.assertEqual(uuids['fpga_ah0'], next(
            row_uuid for row_uuid, deployable_id in held.items()
            if row_uuid == uuids['fpga_ah0']))

    def test_upstream_leftover_is_cyborgs_and_foreign_one_stays(self):
        leftover = '%s_0000:13:00.0' % HOST
        leftover_uuid = self._provider(
            leftover, upstream_sample.provider_uuid(leftover),
            self.compute_node)
        foreign = self._provider('%s_pci_0000_14_00_0' % HOST,
                                 parent=self.compute_node)
        self._report_and_sync()
        found = {rp_uuid for rp_uuid, _ in self._providers()}
        self.assertNotIn(leftover_uuid, found)
        self.assertIn(foreign, found)
