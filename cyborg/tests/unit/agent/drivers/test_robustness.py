"""Broken sysfs trees: a broken card is left out, the others are reported.

Only what hides every device fails the whole discovery (DiscoveryFailed or an
unexpected exception), because the agent then skips its report instead of
making the conductor delete the devices it reported before.
"""

import os
import shutil

from cyborg.agent.drivers import base as driver_base
from cyborg.agent.drivers.fpga import intel
from cyborg.agent.drivers.fpga import xilinx
from cyborg.agent.drivers.gpu import nvidia
from cyborg.agent.drivers.pci import generic
from cyborg.tests.unit.agent.drivers import driver_test
from cyborg.tests.unit.agent.drivers import sysfs_tree

DRIVERS = (intel.IntelFPGADriver, xilinx.XilinxFPGADriver,
           nvidia.NvidiaGPUDriver, generic.GenericPCIDriver)


class TestBrokenTrees(driver_test.SysfsDriverTestCase):

    def setUp(self):
        super().setUp()
        self.flags(group='pci_driver',
                   passthrough_whitelist='[{"address": "*"}]')

    def discover_all(self, tree):
        return {driver.__name__: driver(sysfs_root=tree.root).discover()
                for driver in DRIVERS}

    def test_unlistable_pci_devices_fail_every_driver(self):
        tree = self.useFixture(sysfs_tree.SysfsTree(
            {'files': {'bus/pci/devices': 'oops'}}))

        for driver in DRIVERS:
            error = self.assertRaises(
                driver_base.DiscoveryFailed,
                driver(sysfs_root=tree.root).discover)
            self.assertIn('cannot list %s/bus/pci/devices' % tree.root,
                          str(error), driver.__name__)

    def test_unlistable_fpga_class_fails_the_intel_driver(self):
        tree = self.use_host('host_accelerators')
        shutil.rmtree(os.path.join(tree.root, 'class', 'fpga_region'))
        tree.write('class/fpga_region', 'oops')

        error = self.assertRaises(
            driver_base.DiscoveryFailed,
            intel.IntelFPGADriver(sysfs_root=tree.root).discover)

        self.assertIn('class/fpga_region', str(error))

    def test_host_without_any_of_their_devices_is_no_failure(self):
        self.flags(group='pci_driver',
                   passthrough_whitelist='[{"vendor_id": "10de"}]')
        for tree in (self.use_empty_root(),
                     self.use_host('host_without_accelerators')):
            self.flags(group='xilinx_fpga_driver', lspci_command='true')
            self.assertEqual({driver.__name__: [] for driver in DRIVERS},
                             self.discover_all(tree))
        self.assertEqual('', self.log.output)

    def test_dangling_links_binary_garbage_and_directories_for_files(self):
        tree = self.use_host('host_accelerators')
        root = tree.root
        # A class entry and a virtfn link pointing nowhere.
        os.symlink('../../devices/nowhere/0000:77:00.0/fpga_region/region9',
                   os.path.join(root, 'class', 'fpga_region', 'region9'))
        os.remove(os.path.join(root, sysfs_tree.function_directory(
            '0000:5e:00.0'), 'virtfn0'))
        os.symlink('../0000:5e:00.7', os.path.join(
            root, sysfs_tree.function_directory('0000:5e:00.0'), 'virtfn0'))
        # Bytes that are not text, and a directory where a file belongs.
        with open(os.path.join(root, 'bus/pci/devices/0000:3b:00.0/device'),
                  'wb') as stream:
            stream.write(b'\xff\xfe\x00')
        types = 'bus/pci/devices/0000:3d:00.0/mdev_supported_types/'
        tree.remove(types + 'nvidia-223/name')
        os.mkdir(os.path.join(root, types + 'nvidia-223/name'))
        # An id file too long and full of punctuation.
        tree.write('bus/pci/devices/0000:be:00.0/fpga/intel-fpga-dev.0/'
                   'intel-fpga-port.0/afu_id', '!' * 5000)

        found = self.discover_all(tree)

        self.assertEqual(['fpga-0000:5e:00.0-region0',
                          'fpga-0000:be:00.0-region0'],
                         [device.deployables[0].children[0].name
                          for device in found['IntelFPGADriver']])
        # The link to a missing VF still names a VF of the card.
        self.assertEqual(1, found['IntelFPGADriver'][0]
                         .deployables[0].children[0].num_accelerators)
        # Its management function unreadable, the card is left out rather
        # than reported under its user function.
        self.assertEqual([], found['XilinxFPGADriver'])
        self.assertEqual(['gpu-0000:3d:00.0-nvidia-222'],
                         [deployable.name for deployable in
                          found['NvidiaGPUDriver'][0].deployables[0].children])
        self.assertIn('0000:3b:00.0/device: unreadable', self.log.output)
        self.assertIn('nvidia-223/name: unreadable', self.log.output)
        self.assertIn('afu_id: malformed id', self.log.output)

    def test_unexpected_error_in_one_card_spares_the_others(self):
        tree = self.use_host('host_accelerators')
        driver = intel.IntelFPGADriver(sysfs_root=tree.root)
        broken = driver._device

        def fail_for_the_first_card(address):
            if address == '0000:5e:00.0':
                raise RuntimeError('driver bug')
            return broken(address)

        driver._device = fail_for_the_first_card

        devices = driver.discover()

        self.assertEqual(['be'],
                         [device.controlpath_id.cpid_info['bus']
                          for device in devices])
        self.assertIn('Skipping Intel FPGA 0000:5e:00.0', self.log.output)

    def test_unexpected_error_of_the_whole_discovery_propagates(self):
        tree = self.use_host('host_accelerators')
        for driver_class, method in ((intel.IntelFPGADriver,
                                      '_card_addresses'),
                                     (xilinx.XilinxFPGADriver, '_slots')):
            driver = driver_class(sysfs_root=tree.root)

            def fail():
                raise RuntimeError('driver bug')

            setattr(driver, method, fail)

            self.assertRaises(RuntimeError, driver.discover)
