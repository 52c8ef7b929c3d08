"""Option groups of the agent's accelerator drivers, one group per driver.

The groups are declared here, with the rest of the configuration, so that
the sample configuration lists them without importing the drivers. They
are not registered when ``cyborg.conf`` is imported: each driver module
registers its own group (``register_opts``) when the agent loads it, and
reads its options from there.
"""

from oslo_config import cfg

_SYSFS_ROOT_HELP = 'Where sysfs is mounted; tests point it at a recorded tree.'

intel_fpga_group = cfg.OptGroup(
    'intel_fpga_driver', title='Options of the Intel FPGA driver')
intel_fpga_opts = [
    cfg.StrOpt('sysfs_root', default='/sys', help=_SYSFS_ROOT_HELP),
    cfg.StrOpt('fpgaconf_path', default='fpgaconf',
               help='The OPAE fpgaconf executable that programs a card, run '
                    'as "fpgaconf [--segment 0x<domain>] --bus 0x<bus> '
                    '--device 0x<device> --function 0x<function> <file>" '
                    'on the card\'s physical function (never through a '
                    'shell). It needs the privileges to program the FPGA: '
                    'run the agent with them or name a wrapper here.'),
    cfg.IntOpt('program_timeout', default=300, min=1,
               help='Seconds fpgaconf may take to program a card; past them '
                    'it is killed and the programming fails.'),
    cfg.StrOpt('fpgainfo_path', default='fpgainfo',
               help='The OPAE fpgainfo executable that reads a card\'s '
                    'error registers at every discovery, run as "fpgainfo '
                    'errors all [--segment 0x<domain>] --bus 0x<bus> '
                    '--device 0x<device> --function 0x<function>" (never '
                    'through a shell): a catastrophic or fatal error makes '
                    'the card failed, any other error degraded. Empty: the '
                    'cards are reported healthy without asking. A card '
                    'fpgainfo cannot read is reported healthy (logged '
                    'once).'),
]

xilinx_fpga_group = cfg.OptGroup(
    'xilinx_fpga_driver', title='Options of the Xilinx FPGA driver')
xilinx_fpga_opts = [
    cfg.StrOpt('sysfs_root', default='/sys', help=_SYSFS_ROOT_HELP),
    cfg.StrOpt('lspci_command', default='lspci',
               help='The lspci executable, run as "lspci -nnmm -D" only when '
                    'sysfs has no bus/pci/devices directory.'),
    cfg.StrOpt('xbmgmt_path', default='/opt/xilinx/xrt/bin/xbmgmt',
               help='The XRT xbmgmt executable that programs a card, run as '
                    '"xbmgmt program --device <management function> --user '
                    '<xclbin file>" (never through a shell). It needs the '
                    'privileges to manage the card: run the agent with them '
                    'or name a wrapper here.'),
    cfg.IntOpt('program_timeout', default=300, min=1,
               help='Seconds xbmgmt may take to program a card; past them it '
                    'is killed and the programming fails.'),
]

nvidia_gpu_group = cfg.OptGroup(
    'nvidia_gpu_driver', title='Options of the NVIDIA GPU driver')
nvidia_gpu_opts = [
    cfg.StrOpt('sysfs_root', default='/sys', help=_SYSFS_ROOT_HELP),
    cfg.ListOpt('enabled_vgpu_types', default=[],
                deprecated_group='gpu_devices',
                help='vGPU types (names of the directories of '
                     'mdev_supported_types, e.g. nvidia-222) reported as VGPU '
                     'deployables. Empty: every type the GPU offers. A GPU '
                     'runs one type at a time, so enable one type per GPU '
                     'model to keep Placement from promising more than the '
                     'GPU can create. OpenStack Cyborg\'s [gpu_devices] '
                     'enabled_vgpu_types is read as this option.'),
]

pci_group = cfg.OptGroup(
    'pci_driver', title='Options of the generic PCI passthrough driver')
pci_opts = [
    cfg.StrOpt('sysfs_root', default='/sys', help=_SYSFS_ROOT_HELP),
    cfg.StrOpt('passthrough_whitelist', default='[]',
               help='JSON list of the PCI functions to offer, each a '
                    'mapping with optional keys vendor_id, product_id (hex, '
                    'without 0x) and address (domain:bus:device.function), '
                    'which may use * and ? wildcards, and device_type (the '
                    'type the devices are reported with, default AICHIP). '
                    'Example: [{"vendor_id": "8086", "product_id": "0d5c", '
                    '"address": "0000:5e:00.*"}]'),
]

_OPTS = {
    intel_fpga_group: intel_fpga_opts,
    xilinx_fpga_group: xilinx_fpga_opts,
    nvidia_gpu_group: nvidia_gpu_opts,
    pci_group: pci_opts,
}


def register_opts(conf, group):
    """Register one driver's ``group`` (one of the groups above) on ``conf``."""
    conf.register_group(group)
    conf.register_opts(_OPTS[group], group=group)


def list_opts():
    """Every driver's group and options, for the sample configuration."""
    return dict(_OPTS)
