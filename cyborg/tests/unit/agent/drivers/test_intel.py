"""The Intel FPGA driver against recorded dfl and intel-fpga sysfs trees."""

from cyborg.agent.drivers import base as driver_base
from cyborg.agent.drivers.fpga import intel
from cyborg.tests.unit.agent.drivers import driver_test
from cyborg.tests.unit.agent.drivers import sysfs_tree
from cyborg.tests.unit.agent.drivers.driver_test import pci_controlpath
from cyborg.tests.unit.agent.drivers.driver_test import pci_handle


def card_root(address, *regions):
    """The card's root deployable: no accelerators, no rc, its regions."""
    return driver_base.DriverDeployable(
        name='fpga-' + address, num_accelerators=0, children=list(regions))


PAC_ARRIA10 = driver_base.DriverDevice(
    type='FPGA', vendor='0x8086', model='pac_arria10',
    controlpath_id=pci_controlpath('0000:5e:00.0'),
    std_board_info={'product_id': '0x09c4', 'class': '0x120000'},
    vendor_board_info={'bitstream_id': '0x2300011001030f',
                       'shell_id': '9346116d97f4432b4fa2a3a4b6a1d2ab'},
    deployables=[card_root('0000:5e:00.0', driver_base.DriverDeployable(
        name='fpga-0000:5e:00.0-region0', num_accelerators=1,
        attributes={
            'rc': 'FPGA', 'port': '0',
            'region_id': '9346116d97f4432b4fa2a3a4b6a1d2ab',
            'function_id': 'd8424dc4a4a3c413f89e433683f9040b',
            'trait0': 'CUSTOM_FPGA_INTEL',
            'trait1': 'CUSTOM_FPGA_INTEL_PAC_ARRIA10',
            'trait2': 'CUSTOM_FPGA_REGION_INTEL_'
                      '9346116D97F4432B4FA2A3A4B6A1D2AB',
            'trait3': 'CUSTOM_FPGA_FUNCTION_ID_INTEL_'
                      'D8424DC4A4A3C413F89E433683F9040B'},
        attach_handles=[pci_handle('0000:5e:00.1')],
        # The VF the region is reached through is its child deployable.
        children=[driver_base.DriverDeployable(
            name='fpga-0000:5e:00.0-region0-vf0', num_accelerators=0,
            attributes={'pci_address': '0000:5e:00.1'})]))])

PAC_N3000 = driver_base.DriverDevice(
    type='FPGA', vendor='0x8086', model='pac_n3000',
    controlpath_id=pci_controlpath('0000:be:00.0'),
    std_board_info={'product_id': '0x0b30', 'class': '0x120000'},
    vendor_board_info={'shell_id': '69528db6eb31577a8c3668f9faa081f6'},
    deployables=[card_root('0000:be:00.0', driver_base.DriverDeployable(
        name='fpga-0000:be:00.0-region0', num_accelerators=1,
        attributes={
            'rc': 'FPGA', 'port': '0',
            'region_id': '69528db6eb31577a8c3668f9faa081f6',
            'function_id': 'b0a3f0a100004e9e9a5bc0ffee000001',
            'trait0': 'CUSTOM_FPGA_INTEL',
            'trait1': 'CUSTOM_FPGA_INTEL_PAC_N3000',
            'trait2': 'CUSTOM_FPGA_REGION_INTEL_'
                      '69528DB6EB31577A8C3668F9FAA081F6',
            'trait3': 'CUSTOM_FPGA_FUNCTION_ID_INTEL_'
                      'B0A3F0A100004E9E9A5BC0FFEE000001'},
        # Without virtual functions the card is passed through whole.
        attach_handles=[pci_handle('0000:be:00.0')]))])

PF = 'bus/pci/devices/0000:5e:00.0/'


class TestIntelFPGADriver(driver_test.SysfsDriverTestCase):

    def discover(self, tree):
        return intel.IntelFPGADriver(sysfs_root=tree.root).discover()

    def test_cards_of_both_kernel_layouts(self):
        tree = self.use_host('host_accelerators')

        self.assertEqual([PAC_ARRIA10, PAC_N3000], self.discover(tree))
        self.assertEqual('', self.log.output)

    def test_root_comes_from_the_option(self):
        tree = self.use_host('host_accelerators')
        self.flags(group='intel_fpga_driver', sysfs_root=tree.root)

        self.assertEqual([PAC_ARRIA10, PAC_N3000],
                         intel.IntelFPGADriver().discover())

    def test_host_without_fpgas(self):
        self.assertEqual([], self.discover(
            self.use_host('host_without_accelerators')))
        self.assertEqual([], self.discover(self.use_empty_root()))
        self.assertEqual('', self.log.output)

    def test_card_without_vendor_is_logged_and_skipped(self):
        tree = self.use_host('host_accelerators')
        tree.remove(PF + 'vendor')

        self.assertEqual([PAC_N3000], self.discover(tree))
        self.assertIn('0000:5e:00.0/vendor: missing', self.log.output)

    def test_garbage_in_sriov_numvfs_is_logged_and_skips_the_card(self):
        tree = self.use_host('host_accelerators')
        tree.write(PF + 'sriov_numvfs', 'lots')

        self.assertEqual([PAC_N3000], self.discover(tree))
        self.assertIn("0000:5e:00.0/sriov_numvfs: malformed 'lots'",
                      self.log.output)

    def test_malformed_afu_id_drops_only_the_function_trait(self):
        tree = self.use_host('host_accelerators')
        tree.write('bus/pci/devices/0000:5e:00.1/fpga_region/region2/'
                   'dfl-port.0/afu_id', 'not/an id')

        region = self.discover(tree)[0].deployables[0].children[0]

        self.assertNotIn('function_id', region.attributes)
        self.assertEqual(['CUSTOM_FPGA_INTEL', 'CUSTOM_FPGA_INTEL_PAC_ARRIA10',
                          'CUSTOM_FPGA_REGION_INTEL_'
                          '9346116D97F4432B4FA2A3A4B6A1D2AB'],
                         [value for key, value in region.attributes.items()
                          if key.startswith('trait')])
        self.assertIn('afu_id: malformed id', self.log.output)

    def test_several_ports_get_one_virtual_function_each(self):
        tree = self.use_host('host_accelerators')
        fme = PF + 'fpga_region/region0/dfl-fme.0/'
        tree.write(fme + 'ports_num', '2')
        tree.write(PF + 'sriov_numvfs', '2')
        tree.add_function('0000:5e:00.2', {'files': {
            'vendor': '0x8086', 'device': '0x09c5', 'class': '0x120000'}})
        tree.link(sysfs_tree.function_directory('0000:5e:00.0') + '/virtfn1',
                  sysfs_tree.function_directory('0000:5e:00.2'))

        [root] = self.discover(tree)[0].deployables
        regions = root.children

        self.assertEqual(('fpga-0000:5e:00.0', 0, {}),
                         (root.name, root.num_accelerators, root.attributes))
        self.assertEqual(['fpga-0000:5e:00.0-region0',
                          'fpga-0000:5e:00.0-region1'],
                         [region.name for region in regions])
        self.assertEqual([[pci_handle('0000:5e:00.1')],
                          [pci_handle('0000:5e:00.2')]],
                         [region.attach_handles for region in regions])
        self.assertEqual([[('fpga-0000:5e:00.0-region0-vf0', '0000:5e:00.1')],
                          [('fpga-0000:5e:00.0-region1-vf0', '0000:5e:00.2')]],
                         [[(vf.name, vf.attributes['pci_address'])
                           for vf in region.children] for region in regions])
        self.assertEqual('CUSTOM_FPGA_REGION_INTEL_'
                         '9346116D97F4432B4FA2A3A4B6A1D2AB',
                         regions[1].attributes['trait2'])

    def test_discovery_is_stable(self):
        tree = self.use_host('host_accelerators')
        driver = intel.IntelFPGADriver(sysfs_root=tree.root)

        self.assertEqual(driver.discover(), driver.discover())
