"""The Xilinx FPGA driver against recorded sysfs trees and lspci output."""

import os
import stat

import fixtures

from cyborg.agent.drivers import base as driver_base
from cyborg.agent.drivers.fpga import xilinx
from cyborg.tests.unit.agent.drivers import driver_test
from cyborg.tests.unit.agent.drivers.driver_test import pci_controlpath
from cyborg.tests.unit.agent.drivers.driver_test import pci_handle

ALVEO_U250 = driver_base.DriverDevice(
    type='FPGA', vendor='0x10ee', model='0x5004',
    controlpath_id=pci_controlpath('0000:3b:00.0'),
    std_board_info={'product_id': '0x5004', 'user_product_id': '0x5005',
                    'class': '0x120000'},
    deployables=[driver_base.DriverDeployable(
        name='fpga-0000:3b:00.0', num_accelerators=1,
        attributes={'rc': 'FPGA', 'management_function': '0000:3b:00.0',
                    'user_function': '0000:3b:00.1',
                    'trait0': 'CUSTOM_FPGA_XILINX',
                    'trait1': 'CUSTOM_FPGA_PRODUCT_ID_5004'},
        attach_handles=[pci_handle('0000:3b:00.1')])])


class TestXilinxFPGADriver(driver_test.SysfsDriverTestCase):

    def discover(self, tree):
        return xilinx.XilinxFPGADriver(sysfs_root=tree.root).discover()

    def test_one_device_per_card_attached_through_its_user_function(self):
        tree = self.use_host('host_accelerators')

        self.assertEqual([ALVEO_U250], self.discover(tree))
        self.assertEqual('', self.log.output)

    def test_root_comes_from_the_option(self):
        tree = self.use_host('host_accelerators')
        self.flags(group='xilinx_fpga_driver', sysfs_root=tree.root)

        self.assertEqual([ALVEO_U250], xilinx.XilinxFPGADriver().discover())

    def test_host_without_xilinx_cards(self):
        self.assertEqual([], self.discover(
            self.use_host('host_without_accelerators')))
        # An empty sysfs makes the driver try lspci: one that lists nothing.
        self.flags(group='xilinx_fpga_driver', lspci_command='true')
        self.assertEqual([], self.discover(self.use_empty_root()))

    def test_second_card_is_its_own_device(self):
        tree = self.use_host('host_accelerators')
        for function, product in (('0', '0x500c'), ('1', '0x500d')):
            tree.add_function('0000:d8:00.' + function, {'files': {
                'vendor': '0x10ee', 'device': product, 'class': '0x120000'}})

        devices = self.discover(tree)

        self.assertEqual(['fpga-0000:3b:00.0', 'fpga-0000:d8:00.0'],
                         [device.deployables[0].name for device in devices])
        self.assertEqual('CUSTOM_FPGA_PRODUCT_ID_500C',
                         devices[1].deployables[0].attributes['trait1'])
        self.assertEqual([pci_handle('0000:d8:00.1')],
                         devices[1].deployables[0].attach_handles)

    def test_function_without_vendor_is_logged_and_skipped(self):
        tree = self.use_host('host_accelerators')
        tree.add_function('0000:d8:00.0', {'files': {
            'device': '0x500c', 'class': '0x120000'}})

        self.assertEqual([ALVEO_U250], self.discover(tree))
        self.assertIn('0000:d8:00.0/vendor: missing', self.log.output)

    def test_card_with_a_broken_function_is_logged_and_skipped(self):
        tree = self.use_host('host_accelerators')
        tree.remove('bus/pci/devices/0000:3b:00.0/class')

        self.assertEqual([], self.discover(tree))
        self.assertIn('0000:3b:00.0/class: missing', self.log.output)
        self.assertIn('Skipping the Xilinx card in PCI slot 0000:3b:00',
                      self.log.output)

    def test_garbage_in_sriov_numvfs_is_logged_and_skipped(self):
        tree = self.use_host('host_accelerators')
        tree.add_function('0000:d8:00.0', {'files': {
            'vendor': '0x10ee', 'device': '0x500c', 'class': '0x120000',
            'sriov_numvfs': '\x00\x01'}})

        self.assertEqual([ALVEO_U250], self.discover(tree))
        self.assertIn('0000:d8:00.0/sriov_numvfs: malformed', self.log.output)


class TestXilinxFromLspci(driver_test.SysfsDriverTestCase):
    """Without PCI devices in sysfs, the driver runs lspci."""

    def setUp(self):
        super().setUp()
        self.directory = self.useFixture(fixtures.TempDir()).path
        self.arguments = os.path.join(self.directory, 'arguments')

    def use_lspci(self, output_file, exit_code=0):
        """A stand-in lspci printing ``output_file`` and recording its
        arguments."""
        path = os.path.join(self.directory, 'lspci')
        with open(path, 'w', encoding='utf-8') as stream:
            stream.write('#!/bin/sh\necho "$@" > %s\ncat %s\nexit %d\n'
                         % (self.arguments, output_file, exit_code))
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
        self.flags(group='xilinx_fpga_driver', lspci_command=path)

    def discover(self):
        return xilinx.XilinxFPGADriver(
            sysfs_root=self.use_empty_root().root).discover()

    def test_cards_from_recorded_lspci_output(self):
        self.use_lspci(os.path.join(driver_test.sysfs_tree.FIXTURES,
                                    'lspci_nnmm_D.txt'))

        devices = self.discover()

        self.assertEqual('-nnmm -D\n', open(self.arguments).read())
        self.assertEqual(['fpga-0000:3b:00.0', 'fpga-0000:d8:00.0'],
                         [device.deployables[0].name for device in devices])
        first = devices[0]
        self.assertEqual(ALVEO_U250.deployables, first.deployables)
        self.assertEqual(ALVEO_U250.controlpath_id, first.controlpath_id)
        self.assertEqual(ALVEO_U250.std_board_info, first.std_board_info)

    def test_lines_that_do_not_parse_are_logged_and_skipped(self):
        output = os.path.join(self.directory, 'output')
        with open(output, 'w', encoding='utf-8') as stream:
            stream.write('garbage\n'
                         '3b:00.0 "Processing accelerators [1200]" '
                         '"Xilinx Corporation [10ee]" "Device [5004]"\n'
                         '0000:3b:00.1 "Processing accelerators [1200]" '
                         '"Xilinx Corporation [10ee]" "Device [5005]"\n')
        self.use_lspci(output)

        devices = self.discover()

        self.assertEqual(['fpga-0000:3b:00.1'],
                         [device.deployables[0].name for device in devices])
        self.assertIn("does not parse: 'garbage'", self.log.output)
        self.assertIn('is -D missing?', self.log.output)

    def test_failing_or_missing_lspci_fails_the_discovery(self):
        # The cards are unknown, not absent: reporting none would delete them.
        self.use_lspci('/nonexistent', exit_code=3)
        error = self.assertRaises(driver_base.DiscoveryFailed, self.discover)
        self.assertIn('-nnmm -D exited with 3', str(error))

        self.flags(group='xilinx_fpga_driver',
                   lspci_command=os.path.join(self.directory, 'absent'))
        error = self.assertRaises(driver_base.DiscoveryFailed, self.discover)
        self.assertIn('absent -nnmm -D failed', str(error))
