"""A driver simulating one FPGA, for the all-in-one and the tests.

It touches no hardware: ``discover`` describes the same card every time and
``program`` only records which bitstream was loaded where.
"""

import threading

from cyborg.agent.drivers import base

VENDOR = '0xABCD'
MODEL = 'fake-fpga'
CONTROLPATH_ID = base.DriverControlpathId(
    cpid_type='PCI',
    cpid_info={'domain': '0000', 'bus': '0c', 'device': '00',
               'function': '0'})
# The region is passed to VMs through its virtual function 1.
ATTACH_INFO = {'domain': '0000', 'bus': '0c', 'device': '00', 'function': '1'}


class FakeDriver(base.Driver):
    """One simulated FPGA card with one programmable region."""

    def __init__(self):
        self._lock = threading.Lock()
        self._bitstreams = {}

    def discover(self):
        """Return the simulated FPGA."""
        # TODO(fake fleet issue): describe the devices of [agent]
        # fake_inventory when it is set.
        region = base.DriverDeployable(
            name='fake_fpga_region0',
            num_accelerators=1,
            attributes={'rc': 'FPGA', 'trait1': 'CUSTOM_FAKE_DEVICE'},
            attach_handles=[base.DriverAttachHandle(
                attach_type='TEST_PCI', attach_info=dict(ATTACH_INFO),
                in_use=False)])
        return [base.DriverDevice(
            type='FPGA', vendor=VENDOR, model=MODEL,
            controlpath_id=base.DriverControlpathId(
                cpid_type=CONTROLPATH_ID.cpid_type,
                cpid_info=dict(CONTROLPATH_ID.cpid_info)),
            std_board_info={'device_id': '0xCAFE',
                            'class': 'Processing accelerators'},
            vendor_board_info={'fake_shell': 'fake-shell-1.0'},
            deployables=[region])]

    def program(self, controlpath_id, bitstream_path):
        """Record ``bitstream_path`` as loaded; fail for an unknown device."""
        if controlpath_id != CONTROLPATH_ID:
            return base.ProgramResult.FAILURE
        with self._lock:
            self._bitstreams[_key(controlpath_id)] = bitstream_path
        return base.ProgramResult.SUCCESS

    def loaded_bitstream(self, controlpath_id):
        """The bitstream last programmed into ``controlpath_id``, or None."""
        with self._lock:
            return self._bitstreams.get(_key(controlpath_id))


def _key(controlpath_id):
    return (controlpath_id.cpid_type,
            tuple(sorted(controlpath_id.cpid_info.items())))
