"""Inventory reports end to end: cyborg-agent, -conductor and -api as separate
processes over RabbitMQ, a real database and a real Placement served over HTTP.

The agent runs the fake driver on a fleet file of the test's temporary
directory and reports every second. The test reads the API over HTTP,
Placement through its own admin adapter and, where the API does not show
internal ids, the database. "The next report" is the agent's log line
``Reported <n> device(s) of <host>``, written when the conductor has answered,
that is when the database and Placement are in step with that report.
"""

import http.client
import json
import re

import sqlalchemy as sa

from cyborg.db import models
from cyborg.tests import base
from cyborg.tests.functional.services import deployment

API_VERSION = 'accelerator 2.3'

INTEL_REGION0_ID = '9346116d97f4432b4fa2a3a4b6a1d2ab'
INTEL_REGION1_ID = '5c2e0f9a7d3b4e1c8a6f2b9d0e4c7a13'
INTEL_FUNCTION_ID = 'd8424dc4a4a3c413f89e433683f9040b'
XILINX_REGION_ID = '0f1e2d3c4b5a69788796a5b4c3d2e1f0'

INTEL_FPGA = {
    'vendor': '0x8086', 'vendor_name': 'intel', 'board': 'pac_arria10',
    'model': 'PAC Arria 10 GX', 'product_id': '0x09c4',
    'regions': [
        {'id': INTEL_REGION0_ID, 'function_id': INTEL_FUNCTION_ID,
         'pfs': 1, 'vfs_per_pf': 2},
        {'id': INTEL_REGION1_ID, 'pfs': 1, 'vfs_per_pf': 2},
    ],
}
XILINX_FPGA = {
    'vendor': '0x10ee', 'board': 'u250', 'model': 'Alveo U250',
    'product_id': '0x5004', 'regions': [{'id': XILINX_REGION_ID}],
}
T4_GPU = {
    'model': 'Tesla T4', 'product_id': '0x1eb8',
    'vgpu_types': [
        {'type': 'nvidia-222', 'name': 'GRID T4-1B', 'instances': 4},
        {'type': 'nvidia-223', 'name': 'GRID T4-2B', 'instances': 2},
    ],
}
# The GPU is the last card: removing it moves no other card's PCI address.
FULL_FLEET = {'fpgas': [INTEL_FPGA, XILINX_FPGA], 'gpus': [T4_GPU]}
FLEET_WITHOUT_GPU = {'fpgas': [INTEL_FPGA, XILINX_FPGA]}

# What the fleet file should become, written out by hand from the format of
# etc/cyborg/fake-inventory.yaml: cards on buses 0x10, 0x11, 0x12 in file
# order; device address -> (type, vendor, model).
DEVICES = {
    '0000:10:00.0': ('FPGA', '0x8086', 'PAC Arria 10 GX'),
    '0000:11:00.0': ('FPGA', '0x10ee', 'Alveo U250'),
    '0000:12:00.0': ('GPU', '0x10de', 'Tesla T4'),
}
GPU_ADDRESS = '0000:12:00.0'
INTEL_ADDRESS = '0000:10:00.0'
# Deployables offering accelerators: name -> (device address, resource
# class, total, traits besides OWNER_CYBORG and CUSTOM_FAKE_DEVICE).
PROVIDERS = {
    'fpga-0000:10:00.0-region0': (
        INTEL_ADDRESS, 'FPGA', 2,
        {'CUSTOM_FPGA_INTEL',
         'CUSTOM_FPGA_REGION_' + INTEL_REGION0_ID.upper(),
         'CUSTOM_FPGA_FUNCTION_ID_' + INTEL_FUNCTION_ID.upper()}),
    'fpga-0000:10:00.0-region1': (
        INTEL_ADDRESS, 'FPGA', 2,
        {'CUSTOM_FPGA_INTEL',
         'CUSTOM_FPGA_REGION_' + INTEL_REGION1_ID.upper()}),
    'fpga-0000:11:00.0-region0': (
        '0000:11:00.0', 'FPGA', 1,
        {'CUSTOM_FPGA_XILINX',
         'CUSTOM_FPGA_REGION_' + XILINX_REGION_ID.upper()}),
    'gpu-0000:12:00.0-nvidia-222': (
        GPU_ADDRESS, 'VGPU', 4, {'CUSTOM_NVIDIA_1EB8_T4_1B'}),
    'gpu-0000:12:00.0-nvidia-223': (
        GPU_ADDRESS, 'VGPU', 2, {'CUSTOM_NVIDIA_1EB8_T4_2B'}),
}
# Physical- and virtual-function deployables: name -> parent deployable (a
# PF's region, a VF's PF). No accelerators of their own, so no provider.
FUNCTIONS = {
    'fpga-0000:10:00.0-region0-pf0': 'fpga-0000:10:00.0-region0',
    'fpga-0000:10:00.0-region0-pf0-vf0': 'fpga-0000:10:00.0-region0-pf0',
    'fpga-0000:10:00.0-region0-pf0-vf1': 'fpga-0000:10:00.0-region0-pf0',
    'fpga-0000:10:00.0-region1-pf0': 'fpga-0000:10:00.0-region1',
    'fpga-0000:10:00.0-region1-pf0-vf0': 'fpga-0000:10:00.0-region1-pf0',
    'fpga-0000:10:00.0-region1-pf0-vf1': 'fpga-0000:10:00.0-region1-pf0',
    'fpga-0000:11:00.0-region0-pf0': 'fpga-0000:11:00.0-region0',
}
# The root of each card offering several parts (regions, vGPU types): name
# -> device address. No accelerators, no rc, so no provider.
ROOTS = {
    'fpga-0000:10:00.0': INTEL_ADDRESS,
    'fpga-0000:11:00.0': '0000:11:00.0',
    'gpu-0000:12:00.0': GPU_ADDRESS,
}
COMMON_TRAITS = {'OWNER_CYBORG', 'CUSTOM_FAKE_DEVICE'}
# Attach handles: two VFs per Intel region, the Xilinx PF, one per vGPU.
FPGA_HANDLES = 2 + 2 + 1
GPU_HANDLES = 4 + 2


def device_address(name):
    """The PCI address of the card in a fake deployable's name."""
    return re.match(r'^(?:fpga|gpu)-([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}'
                    r'\.[0-7])(?:-|$)', name).group(1)


def root_name(name):
    """The name of the root of a fake card's deployable ``name``."""
    return name.split('-')[0] + '-' + device_address(name)


class InventoryProcessesMixin(deployment.DeploymentMixin):
    """The scenario of issue 3; ``backend`` is the database of the services."""

    def setUp(self):
        super().setUp()
        self._start_services(FULL_FLEET)

    # -- Reading the API, the database and Placement ------------------------

    def _api(self, method, path):
        connection = http.client.HTTPConnection('127.0.0.1', self.api_port,
                                                timeout=10)
        try:
            # Accept as openstacksdk sends it (requests' default).
            connection.request(method, path,
                               headers={'OpenStack-API-Version': API_VERSION,
                                        'Accept': '*/*'})
            response = connection.getresponse()
            body = response.read()
        finally:
            connection.close()
        return response.status, json.loads(body) if body else None

    def _api_get(self, path):
        status, body = self._api('GET', path)
        self.assertEqual(200, status, '%s: %s' % (path, body))
        return body

    def _api_answers(self):
        try:
            return self._api('GET', '/v2')[0] == 200
        except OSError:
            return False

    def _devices(self):
        """The host's devices through the API, by card address."""
        devices = self._api_get('/v2/devices?hostname=%s' % self.host)
        by_address = {}
        for device in devices['devices']:
            by_address[self._address_of_device(device)] = device
        return by_address

    def _address_of_device(self, device):
        # The API shows no control path; the database has it.
        with self.database.engine.connect() as connection:
            info = connection.execute(
                sa.select(models.ControlpathID.cpid_info)
                .join(models.Device,
                      models.Device.id == models.ControlpathID.device_id)
                .where(models.Device.uuid == device['uuid'])).scalar_one()
        info = json.loads(info)
        return '%(domain)s:%(bus)s:%(device)s.%(function)s' % info

    def _deployables(self):
        """The host's deployables through the API, by name."""
        deployables = self._api_get('/v2/deployables?hostname=%s'
                                    % self.host)
        return {deployable['name']: deployable
                for deployable in deployables['deployables']}

    def _internal_ids(self, model):
        """{uuid: id} of a table, for the ids the API shows but never names."""
        with self.database.engine.connect() as connection:
            rows = connection.execute(sa.select(model.uuid, model.id)).all()
        return dict(rows)

    def _count(self, model):
        with self.database.engine.connect() as connection:
            return connection.execute(
                sa.select(sa.func.count()).select_from(model)).scalar_one()

    def _placement_get(self, url):
        response = self.placement.adapter.get(url)
        if response.status_code == 404:
            return None
        self.assertEqual(200, response.status_code,
                         '%s: %s' % (url, response.text))
        return response.json()

    def _compute_node(self):
        providers = self._placement_get(
            '/resource_providers?name=%s' % self.host)['resource_providers']
        return providers[0] if providers else None

    def _tree(self):
        """The providers of the host's tree but its root, by uuid."""
        compute_node = self._compute_node()
        providers = self._placement_get('/resource_providers?in_tree=%s'
                                        % compute_node['uuid'])
        return {provider['uuid']: provider
                for provider in providers['resource_providers']
                if provider['uuid'] != compute_node['uuid']}

    def _inventory(self, rp_uuid):
        return self._placement_get('/resource_providers/%s/inventories'
                                   % rp_uuid)['inventories']

    def _reserved(self, deployables, names):
        """{name: (reserved, total)} of the providers of ``names``."""
        reserved = {}
        for name in names:
            resource_class = PROVIDERS[name][1]
            record = self._inventory(
                deployables[name]['rp_uuid'])[resource_class]
            reserved[name] = (record['reserved'], record['total'])
        return reserved

    # -- The checks --------------------------------------------------------

    def _inventory_reported(self):
        """Probe: a report was answered and the API shows the whole fleet."""
        # The rows are committed before Placement is synced: only an
        # answered report says both are done.
        if self._reports_done() < 1 or not self._api_answers():
            return None
        deployables = self._deployables()
        if set(deployables) != set(PROVIDERS) | set(FUNCTIONS) | set(ROOTS):
            return None
        if any(deployables[name]['rp_uuid'] is None for name in PROVIDERS):
            return None
        return deployables

    def _assert_devices_and_tree(self, expected_addresses):
        devices = self._devices()
        self.assertEqual(set(expected_addresses), set(devices))
        for address in expected_addresses:
            device = devices[address]
            self.assertEqual(DEVICES[address],
                             (device['type'], device['vendor'],
                              device['model']))
            self.assertEqual(self.host, device['hostname'])

        deployables = self._deployables()
        names = {name for name, (address, *_) in PROVIDERS.items()
                 if address in expected_addresses}
        names |= {name for name in FUNCTIONS
                  if device_address(name) in expected_addresses}
        names |= {name for name, address in ROOTS.items()
                  if address in expected_addresses}
        self.assertEqual(names, set(deployables))
        device_ids = self._internal_ids(models.Device)
        deployable_ids = self._internal_ids(models.Deployable)

        def id_of(name):
            return deployable_ids[deployables[name]['uuid']]

        for name, deployable in deployables.items():
            device = devices[device_address(name)]
            self.assertEqual(device_ids[device['uuid']],
                             deployable['device_id'], name)
            self.assertEqual('fake_driver', deployable['driver_name'], name)
            if name in ROOTS:
                # The whole card: no accelerators, no rc, no provider.
                self.assertIsNone(deployable['parent_id'], name)
                self.assertIsNone(deployable['root_id'], name)
                self.assertEqual(0, deployable['num_accelerators'], name)
                self.assertIsNone(deployable['rp_uuid'], name)
                self.assertNotIn('"rc"', deployable['attributes_list'], name)
            elif name in PROVIDERS:
                # A region or vGPU type: below the card's root, a provider.
                self.assertEqual(id_of(root_name(name)),
                                 deployable['parent_id'], name)
                self.assertEqual(id_of(root_name(name)),
                                 deployable['root_id'], name)
                self.assertEqual(PROVIDERS[name][2],
                                 deployable['num_accelerators'], name)
                self.assertIsNotNone(deployable['rp_uuid'], name)
            else:
                # A region's PF below the region, a PF's VF below the PF;
                # in the card's tree.
                self.assertEqual(id_of(FUNCTIONS[name]),
                                 deployable['parent_id'], name)
                self.assertEqual(id_of(root_name(name)),
                                 deployable['root_id'], name)
                self.assertEqual(0, deployable['num_accelerators'], name)
                self.assertIsNone(deployable['rp_uuid'], name)
        return devices, deployables

    def _assert_placement(self, deployables):
        compute_node = self._compute_node()
        self.assertIsNotNone(compute_node, 'no provider named %s' % self.host)
        tree = self._tree()
        providers = {name: deployable['rp_uuid']
                     for name, deployable in deployables.items()
                     if name in PROVIDERS}
        self.assertEqual(set(providers.values()), set(tree))
        for name, rp_uuid in providers.items():
            provider = tree[rp_uuid]
            _address, resource_class, total, traits = PROVIDERS[name]
            self.assertEqual('%s_%s' % (self.host, name), provider['name'])
            self.assertEqual(compute_node['uuid'],
                             provider['parent_provider_uuid'], name)
            self.assertEqual(compute_node['uuid'],
                             provider['root_provider_uuid'], name)
            inventory = self._inventory(rp_uuid)
            self.assertEqual({resource_class}, set(inventory), name)
            record = inventory[resource_class]
            self.assertEqual((total, total, 0),
                             (record['total'], record['max_unit'],
                              record['reserved']), name)
            held = self._placement_get('/resource_providers/%s/traits'
                                       % rp_uuid)['traits']
            self.assertEqual(traits | COMMON_TRAITS, set(held), name)
        return tree

    def test_reports_reach_database_and_placement(self):
        # 1. The fleet appears in the API and in Placement.
        self._wait_until(self._inventory_reported,
                         'deployables of the whole fleet in the API')
        devices, deployables = self._assert_devices_and_tree(DEVICES)
        self._assert_placement(deployables)
        self.assertEqual(FPGA_HANDLES + GPU_HANDLES,
                         self._count(models.AttachHandle))

        # 2. A disabled device is reserved whole, and reports keep it so.
        intel = devices[INTEL_ADDRESS]
        intel_regions = sorted(name for name, provider in PROVIDERS.items()
                               if provider[0] == INTEL_ADDRESS)
        others = sorted(set(PROVIDERS) - set(intel_regions))
        status, body = self._api('POST',
                                 '/v2/devices/%s/disable' % intel['uuid'])
        self.assertEqual(200, status, body)
        self.assertEqual('maintaining', self._api_get(
            '/v2/devices/%s' % intel['uuid'])['status'])
        expected = {'fpga-0000:10:00.0-region0': (2, 2),
                    'fpga-0000:10:00.0-region1': (2, 2)}
        self.assertEqual(expected, self._reserved(deployables, intel_regions))
        self._wait_for_reports(2, 'after the disable')
        self.assertEqual('maintaining', self._api_get(
            '/v2/devices/%s' % intel['uuid'])['status'])
        self.assertEqual(expected, self._reserved(deployables, intel_regions))
        self.assertEqual({0}, {reserved for reserved, _total in
                               self._reserved(deployables, others).values()})

        status, body = self._api('POST',
                                 '/v2/devices/%s/enable' % intel['uuid'])
        self.assertEqual(200, status, body)
        self.assertEqual('enabled', self._api_get(
            '/v2/devices/%s' % intel['uuid'])['status'])
        self.assertEqual({'fpga-0000:10:00.0-region0': (0, 2),
                          'fpga-0000:10:00.0-region1': (0, 2)},
                         self._reserved(deployables, intel_regions))

        # 3. A card gone from the file is gone from the database and
        # Placement at the next report; the others keep their uuids.
        deployment.write_fleet(self.fleet_path, FLEET_WITHOUT_GPU)
        # A report under way may have read the file before it changed.
        self._wait_for_reports(2, 'after removing the GPU')
        remaining = sorted(set(DEVICES) - {GPU_ADDRESS})
        devices_after, deployables_after = self._assert_devices_and_tree(
            remaining)
        for address in remaining:
            self.assertEqual(devices[address]['uuid'],
                             devices_after[address]['uuid'])
        for name, deployable in deployables_after.items():
            self.assertEqual(
                (deployables[name]['uuid'], deployables[name]['rp_uuid']),
                (deployable['uuid'], deployable['rp_uuid']), name)
        status, _body = self._api('GET', '/v2/devices/%s'
                                  % devices[GPU_ADDRESS]['uuid'])
        self.assertEqual(404, status)
        self.assertEqual(FPGA_HANDLES, self._count(models.AttachHandle))
        self.assertEqual(len(remaining), self._count(models.ControlpathID))
        tree = self._assert_placement(deployables_after)
        for name in ('gpu-0000:12:00.0-nvidia-222',
                     'gpu-0000:12:00.0-nvidia-223'):
            rp_uuid = deployables[name]['rp_uuid']
            self.assertNotIn(rp_uuid, tree)
            self.assertIsNone(self._placement_get('/resource_providers/%s'
                                                  % rp_uuid), name)

        # 4. Every service stops cleanly on SIGTERM: the agent first, then
        # the API and the conductor together (each takes seconds).
        self._assert_clean_stop([self.agent])
        self.assertIn('cyborg-agent on host %s stopped' % self.host,
                      self.agent.log())
        self._assert_clean_stop([self.api, self.conductor])


class TestInventoryProcessesMySQL(InventoryProcessesMixin, base.TestCase):
    backend = 'mysql'


class TestInventoryProcessesPostgreSQL(InventoryProcessesMixin,
                                       base.TestCase):
    backend = 'postgresql'
