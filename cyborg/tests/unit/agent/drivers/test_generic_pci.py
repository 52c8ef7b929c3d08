"""The generic PCI driver: operator specs matched against recorded sysfs."""

import json

from cyborg.agent.drivers import base as driver_base
from cyborg.agent.drivers.pci import generic
from cyborg.tests.unit.agent.drivers import driver_test
from cyborg.tests.unit.agent.drivers.driver_test import pci_controlpath
from cyborg.tests.unit.agent.drivers.driver_test import pci_handle


def pci_device(address, vendor, product, class_code, device_type, traits):
    attributes = {'rc': 'CUSTOM_PCI'}
    attributes.update(driver_base.trait_attributes(traits))
    return driver_base.DriverDevice(
        type=device_type, vendor=vendor, model=product,
        controlpath_id=pci_controlpath(address),
        std_board_info={'product_id': product, 'class': class_code},
        deployables=[driver_base.DriverDeployable(
            name='pci-' + address, num_accelerators=1,
            attributes=attributes, attach_handles=[pci_handle(address)])])


QAT = pci_device('0000:86:00.0', '0x8086', '0x37c8', '0x0b4000', 'AICHIP',
                 ['CUSTOM_PCI_INTEL', 'CUSTOM_PCI_PRODUCT_ID_37C8'])
XILINX_USER = pci_device('0000:3b:00.1', '0x10ee', '0x5005', '0x120000',
                         'FPGA', ['CUSTOM_PCI_XILINX',
                                  'CUSTOM_PCI_PRODUCT_ID_5005'])


class TestGenericPCIDriver(driver_test.SysfsDriverTestCase):

    def discover(self, tree, specs):
        self.flags(group='pci_driver', passthrough_whitelist=json.dumps(specs))
        return generic.GenericPCIDriver(sysfs_root=tree.root).discover()

    def test_functions_matching_a_spec(self):
        tree = self.use_host('host_accelerators')

        devices = self.discover(tree, [
            {'vendor_id': '8086', 'product_id': '37c8'},
            {'vendor_id': '0x10EE', 'address': '0000:3b:00.[1-7]',
             'device_type': 'fpga'}])

        self.assertEqual([XILINX_USER, QAT], devices)
        self.assertEqual('', self.log.output)

    def test_address_wildcards(self):
        tree = self.use_host('host_accelerators')

        devices = self.discover(tree, [{'address': '0000:af:00.*'}])

        self.assertEqual(['pci-0000:af:00.0', 'pci-0000:af:00.1'],
                         [device.deployables[0].name for device in devices])
        self.assertEqual('CUSTOM_PCI_NVIDIA',
                         devices[0].deployables[0].attributes['trait0'])

    def test_unknown_vendor_is_named_by_its_id(self):
        tree = self.use_host('host_accelerators')
        tree.add_function('0000:99:00.0', {'files': {
            'vendor': '0x1d0f', 'device': '0xf010', 'class': '0x120000'}})

        devices = self.discover(tree, [{'vendor_id': '1d0f'}])

        self.assertEqual({'rc': 'CUSTOM_PCI', 'trait0': 'CUSTOM_PCI_1D0F',
                          'trait1': 'CUSTOM_PCI_PRODUCT_ID_F010'},
                         devices[0].deployables[0].attributes)

    def test_no_spec_no_device(self):
        tree = self.use_host('host_accelerators')
        self.assertEqual([], generic.GenericPCIDriver(
            sysfs_root=tree.root).discover())

    def test_host_without_matching_functions(self):
        spec = [{'vendor_id': '10ee'}]
        self.assertEqual([], self.discover(
            self.use_host('host_without_accelerators'), spec))
        self.assertEqual([], self.discover(self.use_empty_root(), spec))

    def test_invalid_whitelist_fails_the_discovery_naming_the_bad_key(self):
        # A configuration error, not a host without devices: reporting none
        # would delete the devices offered so far.
        tree = self.use_host('host_accelerators')
        for text, words in (('[{"vendor": "8086"}]',
                             'passthrough_whitelist[0].vendor: unknown key'),
                            ('[{"vendor_id": 8086}]',
                             'vendor_id: expected a string'),
                            ('{not json', 'not JSON'),
                            ('[{"device_type": "TPU"}]', 'device_type')):
            self.flags(group='pci_driver', passthrough_whitelist=text)
            error = self.assertRaises(
                driver_base.DiscoveryFailed,
                generic.GenericPCIDriver(sysfs_root=tree.root).discover)
            self.assertIn('[pci_driver] passthrough_whitelist is invalid',
                          str(error))
            self.assertIn(words, str(error))

    def test_function_without_vendor_is_logged_and_skipped(self):
        tree = self.use_host('host_accelerators')
        tree.remove('bus/pci/devices/0000:3b:00.1/vendor')

        devices = self.discover(tree, [{'product_id': '5005'},
                                       {'product_id': '37c8'}])

        self.assertEqual([QAT], devices)
        self.assertIn('0000:3b:00.1/vendor: missing', self.log.output)

    def test_garbage_in_sriov_numvfs_is_logged_and_skipped(self):
        tree = self.use_host('host_accelerators')
        tree.write('bus/pci/devices/0000:86:00.0/sriov_numvfs', '1x')

        self.assertEqual([], self.discover(tree, [{'product_id': '37c8'}]))
        self.assertIn("sriov_numvfs: malformed '1x'", self.log.output)
