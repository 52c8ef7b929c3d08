"""NVIDIA GPUs found in sysfs: a whole GPU (PGPU) or its vGPU types (VGPU).

A GPU is a PCI physical function of vendor 0x10de and class 0x03xxxx.
Without ``mdev_supported_types`` it is passed through whole: one PGPU
deployable. With it, the GPU is a root deployable (no accelerators of its
own) and each enabled vGPU type a child deployable whose accelerators are
mediated devices. A GPU with SR-IOV enabled (vGPU on Ampere and later)
offers its vGPUs through its virtual functions: each VF's enabled types are
children of the GPU's root, and the GPU is not passed through whole.

Each MDEV attach handle names the mediated device it stands for
(``mdev_uuid``, derived from the handle so that it is the same at every
discovery). ``prepare`` creates that device through the type's ``create``
file and ``release`` removes it through its ``remove`` file; nothing else
here writes to sysfs.
"""

import dataclasses
import errno
import logging
import os
import re
import uuid

from cyborg import conf
from cyborg.agent.drivers import aer
from cyborg.agent.drivers import base
from cyborg.agent.drivers import sysfs as sysfs_reader
from cyborg.conf import drivers as driver_opts

LOG = logging.getLogger(__name__)

VENDOR_ID = 0x10de
DISPLAY_CLASS = 0x03
MDEV_TYPES = 'mdev_supported_types'
# Where the kernel links every mediated device by its uuid.
MDEV_DEVICES = os.path.join('bus', 'mdev', 'devices')
# The namespace of the uuid5 naming each MDEV handle's mediated device.
MDEV_NAMESPACE = uuid.UUID('af840f7d-b0c0-4dd3-be9b-b61971d7736a')
# A vGPU type id is a directory name of mdev_supported_types.
_TYPE_ID = re.compile(r'^[A-Za-z0-9_.:-]+$')

# Declared in cyborg.conf.drivers; registered when the agent loads this.
group = driver_opts.nvidia_gpu_group
opts = driver_opts.nvidia_gpu_opts
driver_opts.register_opts(conf.CONF, group)


def list_opts():
    """The options of this driver, for the sample configuration."""
    return {group: opts}


def product_text(product_id):
    """A product id (int) as used in traits: four upper-case hex digits."""
    return '%04X' % product_id


def short_type_name(type_name):
    """``GRID T4-1B`` -> ``T4-1B``: the vGPU type name without the brand."""
    words = type_name.split()
    if len(words) > 1 and words[0].upper() == 'GRID':
        words = words[1:]
    return ' '.join(words)


def pgpu_deployable(address, product_id, attach_type='PCI', extra_traits=()):
    """The deployable of a GPU passed through whole."""
    traits = [base.custom_trait('NVIDIA', product_text(product_id))]
    traits.extend(extra_traits)
    attributes = {'rc': 'PGPU'}
    attributes.update(base.trait_attributes(traits))
    return base.DriverDeployable(
        name='gpu-%s' % address, num_accelerators=1, attributes=attributes,
        attach_handles=[base.pci_attach_handle(address, attach_type)])


def mdev_uuid(address, type_id, vgpu_mark):
    """The uuid of the mediated device of the MDEV handle ``vgpu_mark`` of
    type ``type_id`` on the PCI function at ``address``.

    A uuid5 of those three, so every discovery names the same device; it is
    unique on the host, not across hosts.
    """
    return str(uuid.uuid5(MDEV_NAMESPACE,
                          '%s/%s/%s' % (address, type_id, vgpu_mark)))


def vgpu_deployable(address, product_id, type_id, type_name, instances,
                    extra_traits=(), device_api=None):
    """The deployable of one vGPU type of the GPU at ``address``.

    It offers ``instances`` mediated devices, one MDEV attach handle each,
    whose attach info adds ``asked_type``, ``vgpu_mark`` and ``mdev_uuid``
    to the PCI keys.
    """
    traits = [base.custom_trait('NVIDIA', product_text(product_id),
                                short_type_name(type_name))]
    traits.extend(extra_traits)
    attributes = {'rc': 'VGPU', 'vgpu_type': type_id,
                  'vgpu_type_name': type_name}
    if device_api:
        attributes['vgpu_device_api'] = device_api
    attributes.update(base.trait_attributes(traits))
    marks = ['%s_%d' % (type_id, index) for index in range(instances)]
    handles = [base.pci_attach_handle(address, 'MDEV', asked_type=type_id,
                                      vgpu_mark=mark,
                                      mdev_uuid=mdev_uuid(address, type_id,
                                                          mark))
               for mark in marks]
    return base.DriverDeployable(
        name='gpu-%s-%s' % (address, type_id), num_accelerators=instances,
        attributes=attributes, attach_handles=handles)


@dataclasses.dataclass(frozen=True)
class MediatedDevice:
    """The mediated device an MDEV attach handle stands for."""

    address: str  # the PCI function it is made on
    type_id: str
    uuid: str

    def __str__(self):
        return 'mediated device %s (type %s on %s)' % (
            self.uuid, self.type_id, self.address)


def mediated_device(attach_handle):
    """The MediatedDevice an MDEV ``attach_handle`` names.

    :raises: ValueError when its attach info lacks the PCI address, a valid
        ``asked_type`` or a valid ``mdev_uuid``
    """
    info = attach_handle.attach_info
    try:
        address = base.pci_address(info)
    except KeyError as error:
        raise ValueError('no PCI address (%s missing)' % error) from None
    if not base.is_pci_address(address):
        raise ValueError('bad PCI address %r' % address)
    type_id = info.get('asked_type') or ''
    if not _TYPE_ID.match(type_id) or type_id in ('.', '..'):
        raise ValueError('bad or missing asked_type %r' % type_id)
    text = info.get('mdev_uuid') or ''
    try:
        canonical = str(uuid.UUID(text))
    except ValueError:
        canonical = None
    if canonical != text:
        raise ValueError('bad or missing mdev_uuid %r' % text)
    return MediatedDevice(address, type_id, text)


def write_attribute(path, text):
    """Write ``text`` to the sysfs file at ``path`` in one write, as the
    kernel expects; never creates the file.

    :raises: OSError as the kernel answers (e.g. EINVAL, EBUSY, EACCES)
    """
    data = text.encode('ascii')
    descriptor = os.open(path, os.O_WRONLY | os.O_TRUNC)
    try:
        if os.write(descriptor, data) != len(data):
            raise OSError(errno.EIO, 'short write of %r' % text)
    finally:
        os.close(descriptor)


def _error_text(error):
    """``[ENOSPC] No space left on device``: an OSError for a reason."""
    name = errno.errorcode.get(error.errno, 'errno %s' % error.errno)
    return '[%s] %s' % (name, error.strerror or error)


def gpu_root(address, vgpu_types):
    """The root deployable of the GPU at ``address``, its ``vgpu_types``
    deployables below it."""
    return base.root_deployable('gpu-%s' % address, vgpu_types)


def gpu_device(address, product_id, model, deployables, vendor_board_info=None):
    """The DriverDevice of the NVIDIA GPU at ``address``."""
    return base.DriverDevice(
        type='GPU', vendor='0x%04x' % VENDOR_ID, model=model,
        controlpath_id=base.pci_controlpath_id(address),
        std_board_info={'product_id': '0x%04x' % product_id,
                        'controller': 'VGA compatible controller'},
        vendor_board_info=dict(vendor_board_info or {}),
        deployables=deployables)


class NvidiaGPUDriver(base.Driver):
    """NVIDIA GPUs of this host: a PGPU deployable, or a root with a VGPU
    deployable per vGPU type."""

    def __init__(self, sysfs_root=None):
        root = sysfs_root or conf.CONF.nvidia_gpu_driver.sysfs_root
        self._sysfs = sysfs_reader.Sysfs(root)
        self._aer = aer.AerTracker(self._sysfs)

    def discover(self):
        """Return the GPUs in sysfs; a GPU that cannot be read is skipped.

        Each GPU's health is read from the growth of its AER counters
        since the previous discovery (``cyborg.agent.drivers.aer``).

        :raises: base.DiscoveryFailed when the PCI devices cannot be listed
        """
        devices = []
        for function in sysfs_reader.pci_functions(self._sysfs, VENDOR_ID):
            if function.class_code >> 16 != DISPLAY_CLASS:
                continue
            if function.physfn is not None:
                continue
            try:
                device = self._device(function)
            except Exception:
                LOG.exception('Skipping NVIDIA GPU %s', function.address)
                continue
            device.health, device.health_reason = self._aer.health(
                function.address)
            devices.append(device)
        self._aer.forget_others(
            base.pci_address(device.controlpath_id.cpid_info)
            for device in devices)
        return devices

    def _device(self, function):
        address = function.address
        product_id = function.product_id
        if function.virtfns:
            vgpu_types = []
            for virtual_function in function.virtfns:
                vgpu_types.extend(
                    self._vgpu_deployables(virtual_function, product_id))
            deployables = [gpu_root(address, vgpu_types)]
        elif self._sysfs.exists(sysfs_reader.PCI_DEVICES, address,
                                MDEV_TYPES):
            deployables = [gpu_root(
                address, self._vgpu_deployables(address, product_id))]
        else:
            deployables = [pgpu_deployable(address, product_id)]
        return gpu_device(address, product_id, function.product, deployables)

    def _vgpu_deployables(self, address, product_id):
        """A deployable per enabled vGPU type of the function at
        ``address``."""
        enabled = set(conf.CONF.nvidia_gpu_driver.enabled_vgpu_types)
        deployables = []
        for type_id in self._sysfs.list(sysfs_reader.PCI_DEVICES, address,
                                        MDEV_TYPES):
            if enabled and type_id not in enabled:
                continue
            parts = (sysfs_reader.PCI_DEVICES, address, MDEV_TYPES, type_id)
            type_name = self._sysfs.read(*parts, 'name')
            available = self._sysfs.read_int(*parts, 'available_instances')
            if type_name is None or available is None or available < 0:
                continue
            created = len(self._sysfs.list(*parts, 'devices'))
            device_api = self._sysfs.read(*parts, 'device_api',
                                          required=False)
            deployables.append(vgpu_deployable(
                address, product_id, type_id, type_name,
                available + created, device_api=device_api))
        return deployables

    def prepare(self, device, deployable, attach_handle, request_group,
                **kwargs):
        """Create the mediated device of an MDEV handle; a PCI handle (a
        whole GPU) needs nothing.

        The base class sees the request group first, so nothing is created
        for a group it refuses. The uuid is written to the type's
        ``create`` file. A mediated device with that uuid already there is
        success when it is of the handle's type on the handle's function,
        a conflict otherwise.

        :raises: base.PrepareFailed with the reason
        """
        super().prepare(device, deployable, attach_handle, request_group,
                        **kwargs)
        if attach_handle.attach_type != 'MDEV':
            return
        try:
            mdev = mediated_device(attach_handle)
        except ValueError as error:
            raise base.PrepareFailed(
                'MDEV handle of deployable %s names no mediated device: %s'
                % (deployable.name, error)) from None
        found = self._whereabouts(mdev)
        if found == (mdev.address, mdev.type_id):
            LOG.info('The %s exists already', mdev)
            return
        if found is not None:
            raise base.PrepareFailed(
                'cannot create the %s: a mediated device with that uuid '
                'exists already, of type %s on %s'
                % (mdev, found[1] or 'unknown', found[0]))
        path = self._sysfs.path(sysfs_reader.PCI_DEVICES, mdev.address,
                                MDEV_TYPES, mdev.type_id, 'create')
        try:
            write_attribute(path, mdev.uuid)
        except OSError as error:
            # Another prepare of the same handle may have won the race.
            if self._whereabouts(mdev) == (mdev.address, mdev.type_id):
                return
            raise base.PrepareFailed('cannot create the %s: writing %s: %s'
                                     % (mdev, path, _error_text(error))
                                     ) from error
        LOG.info('Created the %s', mdev)

    def release(self, device, deployable, attach_handle):
        """Remove the mediated device of an MDEV handle; a PCI handle needs
        nothing.

        ``1`` is written to the device's ``remove`` file. A device that is
        not there is success, as is a handle without ``mdev_uuid`` (reported
        by an older version); so is a device with the handle's uuid that is
        not the handle's (another type or function), which is left alone.

        :raises: base.ReleaseFailed with the reason
        """
        if attach_handle.attach_type != 'MDEV':
            return
        if 'mdev_uuid' not in attach_handle.attach_info:
            # Reported before this driver created mediated devices: it made
            # none for the handle.
            LOG.debug('MDEV handle of deployable %s names no mediated '
                      'device: nothing to remove', deployable.name)
            return
        try:
            mdev = mediated_device(attach_handle)
        except ValueError as error:
            raise base.ReleaseFailed(
                'MDEV handle of deployable %s names no mediated device: %s'
                % (deployable.name, error)) from None
        found = self._whereabouts(mdev)
        if found is None:
            LOG.debug('The %s is not there: nothing to remove', mdev)
            return
        if found != (mdev.address, mdev.type_id):
            LOG.warning('Not removing the %s: the device with that uuid is '
                        'of type %s on %s', mdev, found[1] or 'unknown',
                        found[0])
            return
        if self._sysfs.exists(MDEV_DEVICES, mdev.uuid):
            path = self._sysfs.path(MDEV_DEVICES, mdev.uuid, 'remove')
        else:
            path = self._sysfs.path(sysfs_reader.PCI_DEVICES, mdev.address,
                                    MDEV_TYPES, mdev.type_id, 'devices',
                                    mdev.uuid, 'remove')
        try:
            write_attribute(path, '1')
        except OSError as error:
            if self._whereabouts(mdev) is None:
                return
            raise base.ReleaseFailed('cannot remove the %s: writing %s: %s'
                                     % (mdev, path, _error_text(error))
                                     ) from error
        LOG.info('Removed the %s', mdev)

    def _whereabouts(self, mdev):
        """(parent PCI address, type id) of the mediated device with
        ``mdev``'s uuid, or None when there is none.

        The kernel links every mediated device at ``bus/mdev/devices/<uuid>``
        to its directory below its parent function, with an ``mdev_type``
        link to its type; without that link, the ``devices`` directories of
        the types of ``mdev``'s function are looked in.
        """
        if self._sysfs.exists(MDEV_DEVICES, mdev.uuid):
            parent = self._sysfs.real_parts(MDEV_DEVICES, mdev.uuid)[-2]
            return parent, self._sysfs.link_name(MDEV_DEVICES, mdev.uuid,
                                                 'mdev_type')
        types = (sysfs_reader.PCI_DEVICES, mdev.address, MDEV_TYPES)
        for type_id in self._sysfs.list(*types):
            if self._sysfs.exists(*types, type_id, 'devices', mdev.uuid):
                return mdev.address, type_id
        return None

    def program(self, controlpath_id, bitstream_path, *,
                deployable_name=None, bitstream=None):
        """GPUs are not programmable: INVALID_DEPLOYABLE."""
        return base.not_programmable('GPUs', controlpath_id)
