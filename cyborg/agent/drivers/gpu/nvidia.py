"""NVIDIA GPUs found in sysfs: a whole GPU (PGPU) or its vGPU types (VGPU).

A GPU is a PCI physical function of vendor 0x10de and class 0x03xxxx.
Without ``mdev_supported_types`` it is passed through whole: one PGPU
deployable. With it, the GPU is a root deployable (no accelerators of its
own) and each enabled vGPU type a child deployable whose accelerators are
mediated devices. A GPU with SR-IOV enabled (vGPU on Ampere and later)
offers its vGPUs through its virtual functions: each VF's enabled types are
children of the GPU's root, and the GPU is not passed through whole.
"""

import logging

from cyborg import conf
from cyborg.agent.drivers import base
from cyborg.agent.drivers import sysfs as sysfs_reader
from cyborg.conf import drivers as driver_opts

LOG = logging.getLogger(__name__)

VENDOR_ID = 0x10de
DISPLAY_CLASS = 0x03
MDEV_TYPES = 'mdev_supported_types'

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


def vgpu_deployable(address, product_id, type_id, type_name, instances,
                    extra_traits=(), device_api=None):
    """The deployable of one vGPU type of the GPU at ``address``.

    It offers ``instances`` mediated devices, one MDEV attach handle each.
    """
    traits = [base.custom_trait('NVIDIA', product_text(product_id),
                                short_type_name(type_name))]
    traits.extend(extra_traits)
    attributes = {'rc': 'VGPU', 'vgpu_type': type_id,
                  'vgpu_type_name': type_name}
    if device_api:
        attributes['vgpu_device_api'] = device_api
    attributes.update(base.trait_attributes(traits))
    handles = [base.pci_attach_handle(address, 'MDEV', asked_type=type_id,
                                      vgpu_mark='%s_%d' % (type_id, index))
               for index in range(instances)]
    return base.DriverDeployable(
        name='gpu-%s-%s' % (address, type_id), num_accelerators=instances,
        attributes=attributes, attach_handles=handles)


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

    def discover(self):
        """Return the GPUs in sysfs; a GPU that cannot be read is skipped.

        :raises: base.DiscoveryFailed when the PCI devices cannot be listed
        """
        devices = []
        for function in sysfs_reader.pci_functions(self._sysfs, VENDOR_ID):
            if function.class_code >> 16 != DISPLAY_CLASS:
                continue
            if function.physfn is not None:
                continue
            try:
                devices.append(self._device(function))
            except Exception:
                LOG.exception('Skipping NVIDIA GPU %s', function.address)
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

    def program(self, controlpath_id, bitstream_path, *,
                deployable_name=None, bitstream=None):
        """GPUs are not programmable: INVALID_DEPLOYABLE."""
        return base.not_programmable('GPUs', controlpath_id)
