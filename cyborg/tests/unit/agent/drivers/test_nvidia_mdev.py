"""The NVIDIA driver creates and removes mediated devices in a sysfs tree.

The tree (``sysfs_tree.SysfsTree``) plays the kernel: after the driver has
written to ``create`` or ``remove``, ``act_on_mdev_writes`` makes or removes
the device as the kernel would have.
"""

import dataclasses
import os
import shutil
import uuid

from cyborg.agent.drivers import base as driver_base
from cyborg.agent.drivers.gpu import nvidia
from cyborg.tests.unit.agent.drivers import driver_test

T4 = '0000:3d:00.0'
T4_1B = 'nvidia-222'
T4_2B = 'nvidia-223'
# Created before the test, listed only under the type's devices/ directory.
RECORDED_MDEV = '4b20d080-1b54-4048-85b3-a6a62d165c01'


class MdevTestCase(driver_test.SysfsDriverTestCase):
    """The recorded host, its driver and the T4's GRID T4-1B handles."""

    def setUp(self):
        super().setUp()
        self.tree = self.use_host('host_accelerators')
        self.driver = nvidia.NvidiaGPUDriver(sysfs_root=self.tree.root)
        self.devices = self.driver.discover()
        self.t4 = self.devices[0]
        self.vgpus = self.t4.deployables[0].children[0]
        self.handles = self.vgpus.attach_handles

    def prepare(self, handle, deployable=None):
        """Have the driver prepare ``handle``; the kernel acts on it."""
        self.driver.prepare(self.t4, deployable or self.vgpus, handle, {})
        self.tree.act_on_mdev_writes()

    def release(self, handle):
        """Have the driver release ``handle``; the kernel acts on it."""
        self.driver.release(self.t4, self.vgpus, handle)
        self.tree.act_on_mdev_writes()

    def read(self, *parts):
        with open(os.path.join(self.tree.root, *parts),
                  encoding='ascii') as stream:
            return stream.read()

    def available(self, type_id=T4_1B):
        return int(self.read(self.tree.type_directory(T4, type_id),
                             'available_instances'))

    def written_to_create(self, type_id=T4_1B):
        """What was written to the type's ``create`` and not acted on."""
        return self.read(self.tree.type_directory(T4, type_id), 'create')

    def with_mdev_uuid(self, handle, mdev_uuid):
        """``handle`` naming the mediated device ``mdev_uuid`` instead."""
        return dataclasses.replace(handle, attach_info=dict(
            handle.attach_info, mdev_uuid=mdev_uuid))


class TestMdevUuid(MdevTestCase):

    def test_mdev_uuid_is_the_same_at_every_discovery(self):
        again = nvidia.NvidiaGPUDriver(sysfs_root=self.tree.root).discover()

        self.assertEqual(
            [handle.attach_info['mdev_uuid'] for handle in self.handles],
            [handle.attach_info['mdev_uuid']
             for handle in again[0].deployables[0].children[0].attach_handles])

    def test_mdev_uuid_differs_per_handle_type_and_gpu(self):
        self.tree.add_function('0000:3e:00.0', {'files': {
            'vendor': '0x10de', 'device': '0x1eb8', 'class': '0x030200',
            'mdev_supported_types/nvidia-222/name': 'GRID T4-1B',
            'mdev_supported_types/nvidia-222/available_instances': '16',
            'mdev_supported_types/nvidia-223/name': 'GRID T4-2B',
            'mdev_supported_types/nvidia-223/available_instances': '8'}})

        uuids = [handle.attach_info['mdev_uuid']
                 for device in self.driver.discover()
                 for root in device.deployables
                 for vgpu_type in root.children
                 for handle in vgpu_type.attach_handles]

        self.assertEqual(16 + 16 + 8, len(uuids))
        self.assertEqual(len(uuids), len(set(uuids)))
        for text in uuids:
            self.assertEqual(text, str(uuid.UUID(text)))


class TestPrepare(MdevTestCase):

    def test_prepare_creates_the_mdev_of_the_handle(self):
        handle = self.handles[0]

        self.prepare(handle)

        self.assertEqual({handle.attach_info['mdev_uuid']: (T4, T4_1B)},
                         self.tree.mdevs())
        self.assertEqual(13, self.available())
        self.assertEqual('', self.log.output)

    def test_second_prepare_finds_the_mdev_and_writes_nothing(self):
        handle = self.handles[3]
        self.prepare(handle)

        self.driver.prepare(self.t4, self.vgpus, handle, {})

        self.assertEqual('', self.written_to_create())
        self.assertEqual({handle.attach_info['mdev_uuid']: (T4, T4_1B)},
                         self.tree.mdevs())

    def test_mdev_listed_only_under_its_type_counts_as_created(self):
        handle = self.with_mdev_uuid(self.handles[0], RECORDED_MDEV)

        self.driver.prepare(self.t4, self.vgpus, handle, {})

        self.assertEqual('', self.written_to_create())

    def test_mdev_of_another_type_with_the_uuid_is_a_conflict(self):
        handle = self.handles[0]
        mdev_uuid = handle.attach_info['mdev_uuid']
        self.tree.set_available(T4, T4_2B, 1)
        self.tree.add_mdev(T4, T4_2B, mdev_uuid)

        error = self.assertRaises(driver_base.PrepareFailed, self.prepare,
                                  handle)

        self.assertEqual(
            'cannot create the mediated device %s (type nvidia-222 on '
            '0000:3d:00.0): a mediated device with that uuid exists '
            'already, of type nvidia-223 on 0000:3d:00.0' % mdev_uuid,
            str(error))
        self.assertEqual({mdev_uuid: (T4, T4_2B)}, self.tree.mdevs())

    def test_mdev_of_another_gpu_with_the_uuid_is_a_conflict(self):
        handle = self.with_mdev_uuid(
            self.handles[0], nvidia.mdev_uuid('0000:b1:00.4', 'nvidia-471',
                                              'nvidia-471_0'))
        types = 'mdev_supported_types/nvidia-471/'
        self.tree.add_function('0000:b1:00.4', {'files': {
            'vendor': '0x10de', 'device': '0x20b0', 'class': '0x030200',
            types + 'name': 'GRID A100-4C', types + 'available_instances': '1'}})
        self.tree.add_mdev('0000:b1:00.4', 'nvidia-471',
                           handle.attach_info['mdev_uuid'])

        error = self.assertRaises(driver_base.PrepareFailed, self.prepare,
                                  handle)

        self.assertIn('exists already, of type nvidia-471 on 0000:b1:00.4',
                      str(error))

    def test_mdev_listed_under_another_type_is_a_conflict(self):
        handle = self.with_mdev_uuid(self.handles[0], RECORDED_MDEV)
        handle.attach_info['asked_type'] = T4_2B

        error = self.assertRaises(driver_base.PrepareFailed, self.prepare,
                                  handle)

        self.assertIn('of type nvidia-222 on 0000:3d:00.0', str(error))

    def test_type_out_of_instances_fails_with_the_kernels_answer(self):
        # 14 instances are available; the recorded mdevs hold the other 2.
        for handle in self.handles[:14]:
            self.prepare(handle)
        handle = self.handles[14]

        error = self.assertRaises(driver_base.PrepareFailed, self.prepare,
                                  handle)

        self.assertEqual(
            'cannot create the mediated device %s (type nvidia-222 on '
            '0000:3d:00.0): writing %s/bus/pci/devices/0000:3d:00.0/'
            'mdev_supported_types/nvidia-222/create: [ENOSPC] No space left '
            'on device' % (handle.attach_info['mdev_uuid'], self.tree.root),
            str(error))
        self.assertEqual(14, len(self.tree.mdevs()))
        self.assertEqual(0, self.available())

    def test_type_gone_since_the_discovery_fails(self):
        type_directory = os.path.join(self.tree.root,
                                      self.tree.type_directory(T4, T4_1B))
        shutil.rmtree(type_directory)

        error = self.assertRaises(driver_base.PrepareFailed, self.prepare,
                                  self.handles[0])

        self.assertIn('[ENOENT] No such file or directory', str(error))
        self.assertFalse(os.path.exists(type_directory))

    def test_handle_naming_no_mdev_fails(self):
        handle = self.with_mdev_uuid(self.handles[0], '../../../../x')

        error = self.assertRaises(driver_base.PrepareFailed, self.prepare,
                                  handle)

        self.assertEqual("MDEV handle of deployable gpu-0000:3d:00.0-"
                         "nvidia-222 names no mediated device: bad or "
                         "missing mdev_uuid '../../../../x'", str(error))
        self.assertEqual('', self.written_to_create())

    def test_whole_gpu_is_prepared_without_writing(self):
        v100 = self.devices[1]
        [deployable] = v100.deployables

        self.driver.prepare(v100, deployable, deployable.attach_handles[0],
                            {})
        self.driver.release(v100, deployable, deployable.attach_handles[0])

        self.assertEqual({}, self.tree.mdevs())
        self.assertEqual('', self.log.output)

    def test_discovery_reports_the_same_handles_after_prepare(self):
        for handle in self.handles[:3]:
            self.prepare(handle)

        self.assertEqual(self.devices, self.driver.discover())
        self.assertEqual(11, self.available())
        self.assertEqual(2 + 3, len(os.listdir(os.path.join(
            self.tree.root, self.tree.type_directory(T4, T4_1B), 'devices'))))


class TestRelease(MdevTestCase):

    def test_release_removes_the_mdev(self):
        kept, released = self.handles[:2]
        self.prepare(kept)
        self.prepare(released)

        self.release(released)

        self.assertEqual({kept.attach_info['mdev_uuid']: (T4, T4_1B)},
                         self.tree.mdevs())
        self.assertEqual(13, self.available())
        self.assertEqual(self.devices, self.driver.discover())

    def test_release_writes_to_the_kernels_remove_file(self):
        handle = self.handles[0]
        self.prepare(handle)

        self.driver.release(self.t4, self.vgpus, handle)

        self.assertEqual('1', self.read('bus/mdev/devices',
                                        handle.attach_info['mdev_uuid'],
                                        'remove'))

    def test_release_of_an_absent_mdev_is_quiet(self):
        self.release(self.handles[0])
        self.release(self.handles[0])

        self.assertEqual({}, self.tree.mdevs())
        self.assertEqual(14, self.available())
        self.assertEqual('', self.log.output)

    def test_release_of_a_handle_from_before_mdev_uuids_is_quiet(self):
        handle = self.handles[0]
        self.prepare(handle)
        info = dict(handle.attach_info)
        del info['mdev_uuid']

        self.release(dataclasses.replace(handle, attach_info=info))

        self.assertEqual([handle.attach_info['mdev_uuid']],
                         list(self.tree.mdevs()))
        self.assertEqual('', self.log.output)

    def test_release_of_a_handle_with_a_bad_mdev_uuid_fails(self):
        handle = self.with_mdev_uuid(self.handles[0], 'not-a-uuid')

        error = self.assertRaises(driver_base.ReleaseFailed, self.release,
                                  handle)

        self.assertIn("bad or missing mdev_uuid 'not-a-uuid'", str(error))

    def test_prepare_after_release_creates_the_mdev_again(self):
        handle = self.handles[0]
        self.prepare(handle)
        self.release(handle)

        self.prepare(handle)

        self.assertEqual({handle.attach_info['mdev_uuid']: (T4, T4_1B)},
                         self.tree.mdevs())

    def test_refused_remove_raises_release_failed(self):
        handle = self.handles[0]
        mdev_uuid = handle.attach_info['mdev_uuid']
        self.prepare(handle)
        remove = os.path.join(self.tree.root, 'bus/mdev/devices', mdev_uuid,
                              'remove')
        os.remove(remove)
        os.symlink('/dev/full', remove)

        error = self.assertRaises(driver_base.ReleaseFailed, self.release,
                                  handle)

        self.assertEqual(
            'cannot remove the mediated device %s (type nvidia-222 on '
            '0000:3d:00.0): writing %s: [ENOSPC] No space left on device'
            % (mdev_uuid, remove), str(error))
        self.assertEqual([mdev_uuid], list(self.tree.mdevs()))

    def test_mdev_of_another_type_with_the_uuid_is_left_alone(self):
        handle = self.handles[0]
        mdev_uuid = handle.attach_info['mdev_uuid']
        self.tree.set_available(T4, T4_2B, 1)
        self.tree.add_mdev(T4, T4_2B, mdev_uuid)

        self.release(handle)

        self.assertEqual({mdev_uuid: (T4, T4_2B)}, self.tree.mdevs())
        self.assertIn('Not removing the mediated device %s' % mdev_uuid,
                      self.log.output)
