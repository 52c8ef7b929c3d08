"""The fake driver: its default FPGA and the fleets of inventory files."""

import logging
import os
import types
import uuid

import fixtures
import yaml

from cyborg.agent.drivers import base as driver_base
from cyborg.agent.drivers import fake
from cyborg.agent.drivers import fake_fpga
from cyborg.agent.drivers.gpu import nvidia
from cyborg.common import vocabulary
from cyborg.tests import base
from cyborg.tests.unit.agent.drivers.driver_test import pci
from cyborg.tests.unit.agent.drivers.driver_test import pci_controlpath

SAMPLE = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', '..',
                      'etc', 'cyborg', 'fake-inventory.yaml')


def parts(device):
    """The deployables below the root of ``device`` (regions, vGPU types)."""
    [root] = device.deployables
    return root.children


def every_deployable(device):
    """Every deployable of ``device``'s tree, parents before children."""
    found = list(device.deployables)
    for deployable in found:
        found.extend(deployable.children)
    return found


class FakeDriverTestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        self.directory = self.useFixture(fixtures.TempDir()).path
        self.log = self.useFixture(fixtures.FakeLogger(
            name='cyborg.agent.drivers', level=logging.WARNING))

    def inventory_file(self, data, name='inventory.yaml'):
        path = os.path.join(self.directory, name)
        with open(path, 'w', encoding='utf-8') as stream:
            if isinstance(data, str):
                stream.write(data)
            else:
                yaml.safe_dump(data, stream)
        return path

    def discover(self, data, host='compute-1', name='inventory.yaml'):
        return fake.FakeDriver(inventory_path=self.inventory_file(data, name),
                               host=host).discover()


class TestDefaultFPGA(FakeDriverTestCase):

    def test_one_fpga_whose_region_is_below_the_card(self):
        self.assertEqual([driver_base.DriverDevice(
            type='FPGA', vendor='0xABCD', model='fake-fpga',
            controlpath_id=pci_controlpath('0000:0c:00.0'),
            std_board_info={'device_id': '0xCAFE',
                            'class': 'Processing accelerators'},
            vendor_board_info={'fake_shell': 'fake-shell-1.0'},
            deployables=[driver_base.DriverDeployable(
                name='fpga-0000:0c:00.0', num_accelerators=0,
                children=[driver_base.DriverDeployable(
                    name='fpga-0000:0c:00.0-region0', num_accelerators=1,
                    attributes={'rc': 'FPGA',
                                'trait1': 'CUSTOM_FAKE_DEVICE'},
                    attach_handles=[driver_base.DriverAttachHandle(
                        attach_type='TEST_PCI',
                        attach_info=pci('0000:0c:00.1'))])])],
            reports_bitstreams=True)],
            fake.FakeDriver().discover())

    def test_option_selects_the_inventory_file(self):
        path = self.inventory_file({'gpus': [{'count': 3}]})
        self.flags(group='agent', fake_inventory=path)

        devices = fake.FakeDriver().discover()

        self.assertEqual(['GPU'] * 3, [device.type for device in devices])


class TestInventoryFile(FakeDriverTestCase):

    def test_sample_file_gives_two_fpgas_and_a_gpu(self):
        devices = fake.FakeDriver(inventory_path=SAMPLE,
                                  host='compute-1').discover()

        self.assertEqual(['FPGA', 'FPGA', 'GPU'],
                         [device.type for device in devices])
        self.assertEqual(
            [['fpga-0000:10:00.0'], ['fpga-0000:11:00.0'],
             ['gpu-0000:12:00.0']],
            [[deployable.name for deployable in device.deployables]
             for device in devices])
        self.assertEqual(
            [['fpga-0000:10:00.0-region0', 'fpga-0000:10:00.0-region1'],
             ['fpga-0000:11:00.0-region0', 'fpga-0000:11:00.0-region1'],
             ['gpu-0000:12:00.0-nvidia-222', 'gpu-0000:12:00.0-nvidia-223']],
            [[deployable.name for deployable in parts(device)]
             for device in devices])
        self.assertEqual([4, 4, 4, 4, 4, 2],
                         [deployable.num_accelerators
                          for device in devices
                          for deployable in parts(device)])
        self.assertEqual('Tesla T4 on compute-1', devices[2].model)
        self.assertEqual('', self.log.output)

    def test_fpga_region_tree(self):
        devices = self.discover({'fpgas': [{
            'vendor': '0x8086', 'board': 'pac_arria10', 'regions': [
                {'id': 'r-1', 'function_id': 'f00d', 'pfs': 2,
                 'vfs_per_pf': 5},
                {'num_accelerators': 3}]}]})

        self.assertEqual(1, len(devices))
        device = devices[0]
        self.assertEqual(('FPGA', '0x8086'), (device.type, device.vendor))
        self.assertEqual(pci_controlpath('0000:10:00.0'),
                         device.controlpath_id)
        # The card is the root: no accelerators, no rc, so no provider.
        [root] = device.deployables
        self.assertEqual(('fpga-0000:10:00.0', 0, {}, []),
                         (root.name, root.num_accelerators, root.attributes,
                          root.attach_handles))
        first, second = root.children
        self.assertEqual(
            {'rc': 'FPGA', 'region_id': 'r-1', 'function_id': 'f00d',
             'trait0': 'CUSTOM_FAKE_DEVICE', 'trait1': 'CUSTOM_FPGA_INTEL',
             'trait2': 'CUSTOM_FPGA_REGION_R_1',
             'trait3': 'CUSTOM_FPGA_FUNCTION_ID_F00D'}, first.attributes)
        self.assertEqual(10, first.num_accelerators)
        # Ten VFs: device 01 functions 0-7, then device 02.
        self.assertEqual(
            ['0000:10:01.%d' % function for function in range(8)]
            + ['0000:10:02.0', '0000:10:02.1'],
            [driver_base.pci_address(handle.attach_info)
             for handle in first.attach_handles])
        self.assertEqual({'TEST_PCI'}, {handle.attach_type
                                        for handle in first.attach_handles})
        # The FPGA model's tree: card, region, PFs, and each PF's VFs below it.
        self.assertEqual(
            [('fpga-0000:10:00.0-region0-pf0',
              {'pci_address': '0000:10:00.0', 'num_vfs': '5'}),
             ('fpga-0000:10:00.0-region0-pf1',
              {'pci_address': '0000:10:00.1', 'num_vfs': '5'})],
            [(pf.name, pf.attributes) for pf in first.children])
        self.assertEqual(
            [driver_base.DriverDeployable(
                name='fpga-0000:10:00.0-region0-pf1-vf%d' % index,
                num_accelerators=0, attributes={'pci_address': address})
             for index, address in enumerate(
                 ['0000:10:01.5', '0000:10:01.6', '0000:10:01.7',
                  '0000:10:02.0', '0000:10:02.1'])],
            first.children[1].children)
        self.assertEqual(
            [driver_base.pci_address(handle.attach_info)
             for handle in first.attach_handles],
            [vf.attributes['pci_address'] for pf in first.children
             for vf in pf.children])
        self.assertEqual([0] * 12, [deployable.num_accelerators
                                    for pf in first.children
                                    for deployable in [pf] + pf.children])
        # A region without VFs is attached through its PF; it may say how
        # many accelerators it offers.
        self.assertEqual(3, second.num_accelerators)
        self.assertEqual(['0000:10:00.2'],
                         [driver_base.pci_address(handle.attach_info)
                          for handle in second.attach_handles])
        self.assertNotIn('function_id', second.attributes)

    def test_gpus_whole_and_with_vgpu_types(self):
        devices = self.discover({'gpus': [
            {'product_id': '0x1db4'},
            {'vgpu_types': [{'type': 'nvidia-222', 'name': 'GRID T4-1B',
                             'instances': 2}]}]})

        whole, split = devices
        self.assertEqual(('GPU', '0x10de'), (whole.type, whole.vendor))
        # A whole GPU is the accelerator itself: one deployable.
        self.assertEqual(
            [driver_base.DriverDeployable(
                name='gpu-0000:10:00.0', num_accelerators=1,
                attributes={'rc': 'PGPU', 'trait0': 'CUSTOM_NVIDIA_1DB4',
                            'trait1': 'CUSTOM_FAKE_DEVICE'},
                attach_handles=[driver_base.DriverAttachHandle(
                    'TEST_PCI', pci('0000:10:00.0'))])],
            whole.deployables)
        [root] = split.deployables
        self.assertEqual(('gpu-0000:11:00.0', 0, {}, []),
                         (root.name, root.num_accelerators, root.attributes,
                          root.attach_handles))
        [vgpu] = root.children
        self.assertEqual('gpu-0000:11:00.0-nvidia-222', vgpu.name)
        self.assertEqual([], vgpu.children)
        self.assertEqual('CUSTOM_NVIDIA_1EB8_T4_1B',
                         vgpu.attributes['trait0'])
        self.assertEqual(
            [dict(pci('0000:11:00.0'), asked_type='nvidia-222',
                  vgpu_mark='nvidia-222_%d' % index,
                  mdev_uuid=nvidia.mdev_uuid('0000:11:00.0', 'nvidia-222',
                                             'nvidia-222_%d' % index))
             for index in range(2)],
            [handle.attach_info for handle in vgpu.attach_handles])
        self.assertEqual({'MDEV'}, {handle.attach_type
                                    for handle in vgpu.attach_handles})

    def test_unquoted_hex_ids_are_read_as_written(self):
        devices = self.discover('fpgas: [{vendor: 0x8086, product_id: 0x09c4}]'
                                '\ngpus: [{product_id: 0x1DB4}]\n')

        self.assertEqual('0x8086', devices[0].vendor)
        self.assertEqual('0x09c4', devices[0].std_board_info['device_id'])
        self.assertEqual('CUSTOM_FPGA_INTEL',
                         parts(devices[0])[0].attributes['trait1'])
        self.assertEqual('CUSTOM_NVIDIA_1DB4',
                         devices[1].deployables[0].attributes['trait0'])

    def test_json_file(self):
        devices = self.discover('{"fpgas": [{"count": 2}], "gpus": []}',
                                name='inventory.json')
        self.assertEqual(2, len(devices))

    def test_empty_file_has_no_devices(self):
        self.assertEqual([], self.discover(''))
        self.assertEqual('', self.log.output)

    def test_same_devices_at_every_discovery_and_in_every_process(self):
        data = {'fpgas': [{'count': 3, 'regions': [{'vfs_per_pf': 2}]}]}
        driver = fake.FakeDriver(inventory_path=self.inventory_file(data),
                                 host='compute-1')

        first = driver.discover()

        self.assertEqual(first, driver.discover())
        # The default region id is a name-based uuid of vendor, board and
        # position, the same on every card of the board and in every process.
        region_id = uuid.uuid5(fake_fpga.REGION_NAMESPACE,
                               '0xABCD/fake_board/0').hex
        self.assertEqual(
            ['CUSTOM_FPGA_REGION_' + region_id.upper()] * 3,
            [parts(device)[0].attributes['trait2'] for device in first])

    def test_one_file_serves_many_hosts(self):
        data = {'fpgas': [{'model': 'fpga of {host}'}]}
        one = self.discover(data, host='compute-1')
        two = self.discover(data, host='compute-2')

        self.assertEqual('fpga of compute-1', one[0].model)
        self.assertEqual('fpga of compute-2', two[0].model)
        self.assertEqual(one[0].deployables, two[0].deployables)

    def test_addresses_are_unique_on_a_host(self):
        devices = self.discover({
            'fpgas': [{'count': 300, 'regions': [
                {'pfs': 2, 'vfs_per_pf': 20}, {'pfs': 1, 'vfs_per_pf': 8}]}],
            'gpus': [{'count': 10}]})

        controlpaths = [driver_base.pci_address(device.controlpath_id
                                                .cpid_info)
                        for device in devices]
        functions = controlpaths + [
            driver_base.pci_address(handle.attach_info)
            for device in devices[:300]
            for deployable in every_deployable(device)
            for handle in deployable.attach_handles]
        names = [deployable.name for device in devices
                 for deployable in every_deployable(device)]
        self.assertEqual(310, len(set(controlpaths)))
        self.assertEqual(310 + 300 * 48, len(set(functions)))
        # A card: its root, two regions, three PFs and 48 VFs; a GPU:
        # itself.
        self.assertEqual(300 * (6 + 48) + 10, len(names))
        self.assertEqual(len(names), len(set(names)))
        self.assertTrue(all(driver_base.is_pci_address(address)
                            for address in functions))

    def test_a_card_on_the_bus_and_functions_an_entry_names(self):
        # Upstream Cyborg's fake driver: a card at 0000:0c:00.0 whose 16
        # handles are the functions that follow it, 00.1 to 02.0.
        [card, next_card] = self.discover({'fpgas': [{
            'count': 2, 'bus': '0c', 'first_vf': '00.1',
            'regions': [{'vfs_per_pf': 16}]}]})

        self.assertEqual('0000:0c:00.0', driver_base.pci_address(
            card.controlpath_id.cpid_info))
        self.assertEqual('0000:0d:00.0', driver_base.pci_address(
            next_card.controlpath_id.cpid_info))
        [region] = parts(card)
        self.assertEqual(
            ['0000:0c:%02x.%d' % divmod(number, 8)
             for number in range(1, 17)],
            [driver_base.pci_address(handle.attach_info)
             for handle in region.attach_handles])

    def test_bus_with_its_domain(self):
        [card] = self.discover({'fpgas': [{'bus': '0001:3a'}]})

        self.assertEqual('0001:3a:00.0', driver_base.pci_address(
            card.controlpath_id.cpid_info))

    def test_removed_card_disappears_at_the_next_discovery(self):
        path = self.inventory_file({'fpgas': [{'count': 2}]})
        driver = fake.FakeDriver(inventory_path=path, host='compute-1')
        self.assertEqual(2, len(driver.discover()))

        self.inventory_file({'fpgas': [{'count': 1}]})

        self.assertEqual(1, len(driver.discover()))

    def test_thousands_of_devices(self):
        # How fast this is, benchmarks/inventory.py measures.
        data = {'fpgas': [{'count': 800, 'regions': [
            {'vfs_per_pf': 8, 'function_id': 'f00d'}]}]}
        driver = fake.FakeDriver(inventory_path=self.inventory_file(data),
                                 host='compute-1')

        devices = driver.discover()

        self.assertEqual(800, len(devices))
        self.assertEqual(800 * 8, sum(len(parts(device)[0].attach_handles)
                                      for device in devices))


class TestMalformedInventory(FakeDriverTestCase):
    """An unusable file fails the discovery: the agent then skips its report,
    so the devices reported before are not deleted."""

    def assert_refused(self, data, words, name='inventory.yaml'):
        error = self.assertRaises(driver_base.DiscoveryFailed, self.discover,
                                  data, name=name)
        self.assertIn('is unusable', str(error))
        self.assertIn(name, str(error))
        self.assertIn(words, str(error))

    def test_unknown_key_is_named(self):
        self.assert_refused({'fpgas': [{'regions': [{'vfs': 4}]}]},
                            'fpgas[0].regions[0].vfs: unknown key')

    def test_wrong_types_are_named(self):
        self.assert_refused({'fpgas': [{'count': 'two'}]},
                            "fpgas[0].count: expected a non-negative integer")
        self.assert_refused({'gpus': {'count': 1}},
                            'inventory.gpus: expected a list')
        self.assert_refused(['fpgas'], 'inventory: expected a mapping')
        self.assert_refused({'fpgas': [{'count': -1}]}, 'fpgas[0].count')

    def test_missing_required_key_is_named(self):
        self.assert_refused({'gpus': [{'vgpu_types': [{'type': 'x',
                                                       'name': 'y'}]}]},
                            'gpus[0].vgpu_types[0].instances: missing')

    def test_bad_ids_are_named(self):
        self.assert_refused({'fpgas': [{'vendor': 'intel'}]},
                            'fpgas[0].vendor: expected a 16-bit hex id')
        self.assert_refused({'fpgas': [{'vendor': 0x18086}]},
                            "fpgas[0].vendor: expected a 16-bit hex id such "
                            "as 0x8086, got '0x18086'")
        self.assert_refused({'gpus': [{'product_id': [1]}]},
                            'gpus[0].product_id: expected a hex id')
        self.assert_refused({'fpgas': [{'attach_type': 'MDEV'}]},
                            'fpgas[0].attach_type: expected one of')
        self.assert_refused(
            {'gpus': [{'vgpu_types': [{'type': 'a/b', 'name': 'y',
                                       'instances': 1}]}]},
            'gpus[0].vgpu_types[0].type')

    def test_a_card_that_cannot_be_addressed_is_refused(self):
        self.assert_refused({'fpgas': [{'regions': [{'pfs': 9}]}]},
                            'at most 8 fit a card')
        self.assert_refused({'fpgas': [{'regions': [{'vfs_per_pf': 249}]}]},
                            'at most 248 fit a card')

    def test_a_bus_or_first_vf_that_cannot_be_used_is_refused(self):
        self.assert_refused({'fpgas': [{'bus': '0x0c'}]},
                            'fpgas[0].bus: expected "bb" or "dddd:bb"')
        self.assert_refused({'fpgas': [{'bus': 'fe', 'count': 3}]},
                            'fpgas[0].bus: 3 cards from bus fe pass bus ff')
        self.assert_refused({'fpgas': [{'first_vf': '1.8'}]},
                            'fpgas[0].first_vf: expected "dd.f"')
        self.assert_refused({'fpgas': [{'first_vf': '00.0'}]},
                            'fpgas[0].first_vf: 00.0 is taken')
        self.assert_refused(
            {'fpgas': [{'first_vf': '1f.0', 'regions': [{'vfs_per_pf': 9}]}]},
            'fpgas[0].regions: 9 VFs, at most 8 fit a card')

    def test_yaml_syntax_error(self):
        self.assert_refused('fpgas: [count: 1\n', 'line 1')

    def test_json_syntax_error(self):
        self.assert_refused('{"fpgas": [', 'Expecting value',
                            name='inventory.json')

    def test_file_that_is_not_text(self):
        path = os.path.join(self.directory, 'inventory.json')
        with open(path, 'wb') as stream:
            stream.write(b'\xff\xfe{')

        error = self.assertRaises(driver_base.DiscoveryFailed,
                                  fake.FakeDriver(inventory_path=path).discover)

        self.assertIn('inventory.json is unusable', str(error))
        self.assertIn("can't decode", str(error))

    def test_missing_file(self):
        driver = fake.FakeDriver(
            inventory_path=os.path.join(self.directory, 'absent.yaml'))

        error = self.assertRaises(driver_base.DiscoveryFailed, driver.discover)

        self.assertIn('absent.yaml is unusable', str(error))
        self.assertIn('No such file or directory', str(error))

    def test_a_directory_instead_of_a_file(self):
        os.mkdir(os.path.join(self.directory, 'fleet.yaml'))
        driver = fake.FakeDriver(
            inventory_path=os.path.join(self.directory, 'fleet.yaml'))

        error = self.assertRaises(driver_base.DiscoveryFailed, driver.discover)

        self.assertIn('fleet.yaml is unusable', str(error))

    def test_devices_of_the_last_discovery_stay_until_the_file_is_fixed(self):
        path = self.inventory_file({'fpgas': [{'count': 2}]})
        driver = fake.FakeDriver(inventory_path=path, host='compute-1')
        devices = driver.discover()
        second = devices[1].controlpath_id

        self.inventory_file({'fpgas': [{'count': 'two'}]})
        self.assertRaises(driver_base.DiscoveryFailed, driver.discover)

        # Still known: it can be programmed as before.
        self.assertIs(vocabulary.ProgramResult.SUCCESS,
                      driver.program(second, '/tmp/bitstream.bin').code)
        self.inventory_file({'fpgas': [{'count': 2}]})
        self.assertEqual(devices, driver.discover())

    def test_no_file_configured_is_the_default_fpga(self):
        self.flags(group='agent', fake_inventory=None)

        devices = fake.FakeDriver().discover()

        self.assertEqual([fake.CONTROLPATH_ID],
                         [device.controlpath_id for device in devices])


class TestProgramming(FakeDriverTestCase):

    def test_any_discovered_card_can_be_programmed(self):
        driver = fake.FakeDriver(inventory_path=self.inventory_file(
            {'fpgas': [{'count': 2}]}), host='compute-1')
        second = driver.discover()[1].controlpath_id

        outcome = driver.program(second, '/tmp/bitstream.bin')

        self.assertIs(vocabulary.ProgramResult.SUCCESS, outcome.code)
        self.assertTrue(outcome.succeeded)
        self.assertEqual('/tmp/bitstream.bin',
                         driver.loaded_bitstream(second))

    def test_a_card_no_longer_in_the_file_cannot_be_programmed(self):
        driver = fake.FakeDriver(inventory_path=self.inventory_file(
            {'fpgas': [{'count': 2}]}), host='compute-1')
        second = driver.discover()[1].controlpath_id
        self.inventory_file({'fpgas': [{'count': 1}]})
        driver.discover()

        outcome = driver.program(second, '/tmp/bitstream.bin')

        self.assertIs(vocabulary.ProgramResult.INVALID_DEPLOYABLE,
                      outcome.code)
        self.assertIn('no simulated FPGA has control path 0000:11:00.0',
                      outcome.message)
        self.assertIsNone(driver.loaded_bitstream(second))


class TestRecordedCalls(base.TestCase):
    """A long-running all-in-one keeps a bounded record of its calls."""

    def test_only_the_last_releases_are_kept(self):
        driver = fake.FakeDriver()
        for number in range(fake.RECORDED + 5):
            driver.release(None, types.SimpleNamespace(name='region-%d'
                                                       % number),
                           types.SimpleNamespace(attach_info={}))
        self.assertEqual(fake.RECORDED, len(driver.releases))
        self.assertEqual('region-5', driver.releases[0][0])
        self.assertEqual('region-%d' % (fake.RECORDED + 4),
                         driver.releases[-1][0])
