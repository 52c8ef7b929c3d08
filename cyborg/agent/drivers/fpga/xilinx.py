"""Xilinx FPGA cards (PCI vendor 0x10ee) found in /sys/bus/pci/devices.

An Alveo-style card shows two physical functions in one PCI slot: the
management function (the lower function number, used to program the card)
and the user function (passed to VMs). Each card is one device with one
deployable whose attach handle is the user function.
"""

import collections
import logging

from oslo_config import cfg

from cyborg import conf
from cyborg.agent.drivers import base
from cyborg.agent.drivers import sysfs as sysfs_reader

LOG = logging.getLogger(__name__)

VENDOR_ID = 0x10ee

group = cfg.OptGroup('xilinx_fpga_driver',
                     title='Options of the Xilinx FPGA driver')
opts = [
    cfg.StrOpt('sysfs_root', default='/sys',
               help='Where sysfs is mounted; tests point it at a recorded '
                    'tree.'),
]
conf.CONF.register_group(group)
conf.CONF.register_opts(opts, group=group)


def list_opts():
    """The options of this driver, for the sample configuration."""
    return {group: opts}


def card_device(management, user):
    """The DriverDevice of one card from its two PCIFunctions."""
    product = '%04X' % management.product_id
    attributes = {'rc': 'FPGA', 'management_function': management.address,
                  'user_function': user.address}
    attributes.update(base.trait_attributes([
        base.custom_trait('FPGA', 'XILINX'),
        base.custom_trait('FPGA', 'PRODUCT', 'ID', product)]))
    deployable = base.DriverDeployable(
        name='fpga-%s' % management.address, num_accelerators=1,
        attributes=attributes,
        attach_handles=[base.pci_attach_handle(user.address)])
    return base.DriverDevice(
        type='FPGA', vendor=management.vendor, model=management.product,
        controlpath_id=base.pci_controlpath_id(management.address),
        std_board_info={'product_id': management.product,
                        'user_product_id': user.product,
                        'class': '0x%06x' % management.class_code},
        deployables=[deployable])


class XilinxFPGADriver(base.Driver):
    """Xilinx cards of this host, one deployable each."""

    def __init__(self, sysfs_root=None):
        root = sysfs_root or conf.CONF.xilinx_fpga_driver.sysfs_root
        self._sysfs = sysfs_reader.Sysfs(root)

    def discover(self):
        """Return one device per Xilinx card; unreadable functions skipped."""
        try:
            functions = sysfs_reader.pci_functions(self._sysfs, VENDOR_ID)
        except Exception:
            LOG.exception('Xilinx FPGA discovery failed')
            return []
        slots = collections.defaultdict(list)
        for function in functions:
            if function.physfn is None:
                slots[function.address.rsplit('.', 1)[0]].append(function)
        devices = []
        for slot in sorted(slots):
            cards = sorted(slots[slot], key=lambda function: function.address)
            management = cards[0]
            user = cards[1] if len(cards) > 1 else cards[0]
            devices.append(card_device(management, user))
        return devices

    def program(self, controlpath_id, bitstream_path):
        """Programming through the Xilinx tools is not supported yet."""
        return base.ProgramResult.FAILURE
