"""No sysfs tree, however broken, makes a driver's discover() raise."""

import os

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

    def test_pci_devices_is_a_file(self):
        tree = self.useFixture(sysfs_tree.SysfsTree(
            {'files': {'bus/pci/devices': 'oops'}}))

        self.assertEqual({name: [] for name in
                          ('IntelFPGADriver', 'XilinxFPGADriver',
                           'NvidiaGPUDriver', 'GenericPCIDriver')},
                         self.discover_all(tree))
        self.assertIn('bus/pci/devices: unreadable', self.log.output)

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
                         [device.deployables[0].name
                          for device in found['IntelFPGADriver']])
        # The link to a missing VF still names a VF of the card.
        self.assertEqual(1, found['IntelFPGADriver'][0]
                         .deployables[0].num_accelerators)
        # Its management function unreadable, the card is left out rather
        # than reported under its user function.
        self.assertEqual([], found['XilinxFPGADriver'])
        self.assertEqual(['gpu-0000:3d:00.0-nvidia-222'],
                         [deployable.name for deployable in
                          found['NvidiaGPUDriver'][0].deployables])
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
