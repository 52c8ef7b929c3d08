"""The NVIDIA GPU driver against recorded sysfs trees."""

import os

from cyborg.agent.drivers import base as driver_base
from cyborg.agent.drivers.gpu import nvidia
from cyborg.tests.unit.agent.drivers import driver_test
from cyborg.tests.unit.agent.drivers import sysfs_tree
from cyborg.tests.unit.agent.drivers.driver_test import pci_controlpath
from cyborg.tests.unit.agent.drivers.driver_test import pci_handle

T4_TYPES = 'bus/pci/devices/0000:3d:00.0/mdev_supported_types/'


def t4(*vgpu_types):
    """The T4 with vGPU types: its root deployable, the types below it."""
    return driver_base.DriverDevice(
        type='GPU', vendor='0x10de', model='0x1eb8',
        controlpath_id=pci_controlpath('0000:3d:00.0'),
        std_board_info={'product_id': '0x1eb8',
                        'controller': 'VGA compatible controller'},
        deployables=[driver_base.DriverDeployable(
            name='gpu-0000:3d:00.0', num_accelerators=0,
            children=list(vgpu_types))])


def t4_vgpu(type_id, type_name, trait, count):
    return driver_base.DriverDeployable(
        name='gpu-0000:3d:00.0-' + type_id, num_accelerators=count,
        attributes={'rc': 'VGPU', 'vgpu_type': type_id,
                    'vgpu_type_name': type_name,
                    'vgpu_device_api': 'vfio-pci', 'trait0': trait},
        attach_handles=[
            mdev_handle('0000:3d:00.0', type_id, index)
            for index in range(count)])


def mdev_handle(address, type_id, index):
    """The MDEV handle ``index`` of ``type_id`` on ``address``."""
    mark = '%s_%d' % (type_id, index)
    return pci_handle(address, 'MDEV', asked_type=type_id, vgpu_mark=mark,
                      mdev_uuid=nvidia.mdev_uuid(address, type_id, mark))


# 14 vGPUs can still be created and 2 exist already.
T4_1B = t4_vgpu('nvidia-222', 'GRID T4-1B', 'CUSTOM_NVIDIA_1EB8_T4_1B', 16)
T4_2B = t4_vgpu('nvidia-223', 'GRID T4-2B', 'CUSTOM_NVIDIA_1EB8_T4_2B', 0)
V100 = driver_base.DriverDevice(
    type='GPU', vendor='0x10de', model='0x1db4',
    controlpath_id=pci_controlpath('0000:af:00.0'),
    std_board_info={'product_id': '0x1db4',
                    'controller': 'VGA compatible controller'},
    deployables=[driver_base.DriverDeployable(
        name='gpu-0000:af:00.0', num_accelerators=1,
        attributes={'rc': 'PGPU', 'trait0': 'CUSTOM_NVIDIA_1DB4'},
        attach_handles=[pci_handle('0000:af:00.0')])])


class TestNvidiaGPUDriver(driver_test.SysfsDriverTestCase):

    def discover(self, tree):
        return nvidia.NvidiaGPUDriver(sysfs_root=tree.root).discover()

    def test_vgpu_types_and_a_whole_gpu(self):
        tree = self.use_host('host_accelerators')

        self.assertEqual([t4(T4_1B, T4_2B), V100], self.discover(tree))
        self.assertEqual('', self.log.output)

    def test_mdev_handles_carry_the_pci_keys_type_mark_and_mdev_uuid(self):
        tree = self.use_host('host_accelerators')

        handle = self.discover(tree)[0].deployables[0].children[0] \
            .attach_handles[15]

        self.assertEqual(
            {'domain': '0000', 'bus': '3d', 'device': '00', 'function': '0',
             'asked_type': 'nvidia-222', 'vgpu_mark': 'nvidia-222_15',
             # Pinned: existing mediated devices are found by this uuid.
             'mdev_uuid': 'f26541d8-2739-578d-bb3f-8d2a1ade108c'},
            handle.attach_info)

    def test_only_enabled_vgpu_types_are_reported(self):
        tree = self.use_host('host_accelerators')
        self.flags(group='nvidia_gpu_driver', sysfs_root=tree.root,
                   enabled_vgpu_types=['nvidia-223'])

        self.assertEqual([t4(T4_2B), V100],
                         nvidia.NvidiaGPUDriver().discover())

    def test_host_without_gpus(self):
        self.assertEqual([], self.discover(
            self.use_host('host_without_accelerators')))
        self.assertEqual([], self.discover(self.use_empty_root()))

    def test_gpu_without_vendor_is_logged_and_skipped(self):
        tree = self.use_host('host_accelerators')
        tree.remove('bus/pci/devices/0000:3d:00.0/vendor')

        self.assertEqual([V100], self.discover(tree))
        self.assertIn('0000:3d:00.0/vendor: missing', self.log.output)

    def test_garbage_in_sriov_numvfs_is_logged_and_skipped(self):
        tree = self.use_host('host_accelerators')
        tree.write('bus/pci/devices/0000:af:00.0/sriov_numvfs', '-')

        self.assertEqual([t4(T4_1B, T4_2B)], self.discover(tree))
        self.assertIn("0000:af:00.0/sriov_numvfs: malformed '-'",
                      self.log.output)

    def test_vgpu_type_with_garbage_instances_is_logged_and_skipped(self):
        tree = self.use_host('host_accelerators')
        tree.write(T4_TYPES + 'nvidia-222/available_instances', 'many')

        self.assertEqual([t4(T4_2B), V100], self.discover(tree))
        self.assertIn("nvidia-222/available_instances: malformed 'many'",
                      self.log.output)

    def test_gpu_with_no_vgpu_type_left_reports_only_its_root(self):
        tree = self.use_host('host_accelerators')
        self.flags(group='nvidia_gpu_driver', enabled_vgpu_types=['nope'])

        self.assertEqual([t4(), V100], self.discover(tree))

    def test_added_type_directory_is_found_at_the_next_discovery(self):
        tree = self.use_host('host_accelerators')
        driver = nvidia.NvidiaGPUDriver(sysfs_root=tree.root)
        driver.discover()
        tree.write(T4_TYPES + 'nvidia-224/name', 'GRID T4-4C')
        tree.write(T4_TYPES + 'nvidia-224/available_instances', '4')

        names = [deployable.name for deployable in
                 driver.discover()[0].deployables[0].children]

        self.assertEqual(['gpu-0000:3d:00.0-nvidia-222',
                          'gpu-0000:3d:00.0-nvidia-223',
                          'gpu-0000:3d:00.0-nvidia-224'], names)

    def test_gpu_with_sr_iov_offers_its_vgpus_through_its_vfs(self):
        tree = self.use_host('host_accelerators')
        vfs = ['0000:b1:00.4', '0000:b1:00.5']
        files = {'vendor': '0x10de', 'device': '0x20b0', 'class': '0x030200'}
        tree.add_function('0000:b1:00.0', {'files': dict(
            files, sriov_totalvfs='16', sriov_numvfs='2')})
        for index, vf in enumerate(vfs):
            types = 'mdev_supported_types/nvidia-471/'
            tree.add_function(vf, {'files': dict(files, **{
                types + 'name': 'GRID A100-4C',
                types + 'available_instances': str(1 - index)}),
                'directories': [types + 'devices'] + (
                    [types + 'devices/a1b2c3d4-0000-4000-8000-000000000001']
                    if index else [])})
            tree.link(sysfs_tree.function_directory('0000:b1:00.0')
                      + '/virtfn%d' % index,
                      sysfs_tree.function_directory(vf))
            tree.link(sysfs_tree.function_directory(vf) + '/physfn',
                      sysfs_tree.function_directory('0000:b1:00.0'))

        a100 = self.discover(tree)[2]
        [root] = a100.deployables

        self.assertEqual(pci_controlpath('0000:b1:00.0'), a100.controlpath_id)
        self.assertEqual(('gpu-0000:b1:00.0', 0, {}, []),
                         (root.name, root.num_accelerators, root.attributes,
                          root.attach_handles))
        self.assertEqual(
            [('gpu-0000:b1:00.4-nvidia-471', 1,
              [mdev_handle('0000:b1:00.4', 'nvidia-471', 0)],
              'CUSTOM_NVIDIA_20B0_A100_4C'),
             ('gpu-0000:b1:00.5-nvidia-471', 1,
              [mdev_handle('0000:b1:00.5', 'nvidia-471', 0)],
              'CUSTOM_NVIDIA_20B0_A100_4C')],
            [(deployable.name, deployable.num_accelerators,
              deployable.attach_handles, deployable.attributes['trait0'])
             for deployable in root.children])
        self.assertEqual(3, len(self.discover(tree)))

    def test_fixture_layout_is_the_kernels(self):
        tree = self.use_host('host_accelerators')
        device = os.path.join(tree.root, 'bus/pci/devices/0000:3d:00.0')
        self.assertEqual('../../../devices/pci0000:3d/0000:3d:00.0',
                         os.readlink(device))
        self.assertEqual('0x10de\n', open(os.path.join(device, 'vendor')).read())
