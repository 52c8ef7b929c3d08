"""What the FPGA drivers read back after programming, and the shells they
report: the Intel driver from its recorded sysfs tree (a stand-in fpgaconf
changes the AFU id the port shows), the Xilinx driver from a stand-in
xbmgmt printing what ``xbmgmt examine`` prints, and the verification the
agent makes of both (``programming.verify``)."""

import os
import uuid

import fixtures

from cyborg.agent import programming
from cyborg.agent.drivers import base as driver_base
from cyborg.agent.drivers.fpga import intel
from cyborg.agent.drivers.fpga import xilinx
from cyborg.tests.unit.agent.drivers import driver_test
from cyborg.tests.unit.agent.drivers import test_program_command
from cyborg.tests.unit.agent.drivers.driver_test import pci_controlpath

INTEL_CARD = '0000:5e:00.0'
INTEL_REGION = 'fpga-0000:5e:00.0-region0'
AFU_FILE = 'bus/pci/devices/0000:5e:00.1/fpga_region/region2/dfl-port.0/' \
    'afu_id'
# The AFU (shown below the VF its port was released to) and PR interface
# ids of the recorded Arria 10 card.
AFU_ID = 'd8424dc4a4a3c413f89e433683f9040b'
INTERFACE_ID = '9346116d97f4432b4fa2a3a4b6a1d2ab'
XILINX_CARD = '0000:3b:00.0'
PLATFORM_UUID = '0b095b81fa4b4b0f8ab8e7b8c4a7d28e'
XCLBIN_UUID = 'f1c2d3e4a5b6478899aabbccddeeff00'
EXAMINE = '''
-----------------------------------------------
1/1 [0000:3b:00.0] : xilinx_u250_gen3x16_xdma_shell_4_1
-----------------------------------------------
Flashable partitions running on FPGA
  Platform             : xilinx_u250_gen3x16_xdma_shell_4_1
  SC Version           : 4.6.20
  Platform UUID        : %s
  Interface UUID       : 0xA1B2C3D4E5F60718293A4B5C6D7E8F90
Dynamic region
  Xclbin UUID          : %s
'''


class Metadata:
    """The bitstream metadata ``verify`` reads: its function_uuid."""

    def __init__(self, function_uuid):
        self.function_uuid = function_uuid


class TestIntelReadback(driver_test.SysfsDriverTestCase):

    def setUp(self):
        super().setUp()
        self.tree = self.use_host('host_accelerators')
        self.directory = self.useFixture(fixtures.TempDir()).path
        self.fpgaconf = test_program_command.StandIn(self.directory,
                                                     'fpgaconf')
        self.driver = intel.IntelFPGADriver(
            sysfs_root=self.tree.root, fpgaconf_path=self.fpgaconf.path)
        self.bitstream = os.path.join(self.directory, 'aes.gbs')
        with open(self.bitstream, 'wb') as stream:
            stream.write(b'\x00gbs')

    def loaded(self, name=INTEL_REGION):
        return self.driver.loaded(pci_controlpath(INTEL_CARD), name)

    def test_the_port_reports_its_afu_id(self):
        self.assertEqual(driver_base.Readback(function_id=AFU_ID),
                         self.loaded())
        # The card's one region when none is named.
        self.assertEqual(driver_base.Readback(function_id=AFU_ID),
                         self.loaded(None))

    def test_the_afu_a_programming_loads_is_read_back(self):
        new_afu = uuid.uuid4()
        self.fpgaconf.behave(write={
            os.path.join(self.tree.root, AFU_FILE): str(new_afu)})

        outcome = self.driver.program(pci_controlpath(INTEL_CARD),
                                      self.bitstream,
                                      deployable_name=INTEL_REGION)

        self.assertTrue(outcome.succeeded)
        self.assertEqual(new_afu.hex, self.loaded().function_id)
        self.assertEqual(self.loaded(), programming.verify(
            self.driver, pci_controlpath(INTEL_CARD), INTEL_REGION,
            'image-1', Metadata(str(new_afu))))

    def test_a_tool_that_loaded_nothing_fails_verification(self):
        # fpgaconf exits 0, but the port still shows the old AFU.
        self.assertTrue(self.driver.program(
            pci_controlpath(INTEL_CARD), self.bitstream,
            deployable_name=INTEL_REGION).succeeded)
        wanted = str(uuid.uuid4())

        error = self.assertRaises(
            programming.VerificationFailed, programming.verify, self.driver,
            pci_controlpath(INTEL_CARD), INTEL_REGION, 'image-1',
            Metadata(wanted))

        self.assertEqual('verification failed: the region reports function '
                         '%s, not image image-1 (function %s)'
                         % (AFU_ID, wanted), str(error))

    def test_an_unknown_region_or_card_cannot_be_read(self):
        error = self.assertRaises(driver_base.ReadbackFailed, self.loaded,
                                  'fpga-0000:5e:00.0-region7')
        self.assertIn('has no region fpga-0000:5e:00.0-region7', str(error))
        self.assertRaises(driver_base.ReadbackFailed, self.driver.loaded,
                          pci_controlpath('0000:99:00.0'), None)
        self.assertRaises(driver_base.ReadbackFailed, self.loaded,
                          'fpga-0000:5f:00.0-region0')

    def test_the_pr_interface_id_is_the_shell(self):
        devices = {device.controlpath_id.cpid_info['bus']: device
                   for device in self.driver.discover()}

        self.assertEqual(INTERFACE_ID,
                         devices['5e'].vendor_board_info['shell_id'])
        # The older layout's dashed interface id, as 32 hex digits.
        self.assertEqual('69528db6eb31577a8c3668f9faa081f6',
                         devices['be'].vendor_board_info['shell_id'])


class TestXilinxReadback(driver_test.SysfsDriverTestCase):

    def setUp(self):
        super().setUp()
        self.directory = self.useFixture(fixtures.TempDir()).path
        self.xbmgmt = test_program_command.StandIn(self.directory, 'xbmgmt')
        self.xbmgmt.behave(stdout=EXAMINE % (PLATFORM_UUID, XCLBIN_UUID))
        self.tree = self.use_host('host_accelerators')
        self.driver = xilinx.XilinxFPGADriver(sysfs_root=self.tree.root,
                                              xbmgmt_path=self.xbmgmt.path)

    def test_the_xclbin_uuid_is_read_back(self):
        readback = self.driver.loaded(pci_controlpath(XILINX_CARD),
                                      'fpga-' + XILINX_CARD)

        self.assertEqual(driver_base.Readback(function_id=XCLBIN_UUID),
                         readback)
        self.assertEqual([['examine', '--device', XILINX_CARD]],
                         self.xbmgmt.runs)
        self.assertIsNone(driver_base.readback_problem(
            readback, 'image-1', str(uuid.UUID(XCLBIN_UUID))))

    def test_another_xclbin_fails_verification(self):
        wanted = str(uuid.uuid4())

        error = self.assertRaises(
            programming.VerificationFailed, programming.verify, self.driver,
            pci_controlpath(XILINX_CARD), None, 'image-1', Metadata(wanted))

        self.assertIn('the region reports function %s, not image image-1'
                      % XCLBIN_UUID, str(error))

    def test_a_failing_examine_cannot_be_read(self):
        self.xbmgmt.behave(exit=1, stderr='ERROR: no device')

        error = self.assertRaises(
            programming.VerificationFailed, programming.verify, self.driver,
            pci_controlpath(XILINX_CARD), None, 'image-1', None)

        self.assertIn('xbmgmt exited with 1 reading fpga-0000:3b:00.0: '
                      'ERROR: no device', str(error))

    def test_the_platform_uuid_is_the_shell(self):
        [device] = self.driver.discover()

        self.assertEqual({'shell_id': PLATFORM_UUID},
                         device.vendor_board_info)

    def test_the_interface_uuid_when_no_platform_uuid(self):
        self.xbmgmt.behave(stdout='Interface UUID : 0x%s\n' % PLATFORM_UUID)

        [device] = self.driver.discover()

        self.assertEqual(PLATFORM_UUID, device.vendor_board_info['shell_id'])

    def test_without_xbmgmt_the_card_has_no_shell(self):
        driver = xilinx.XilinxFPGADriver(
            sysfs_root=self.tree.root,
            xbmgmt_path=os.path.join(self.directory, 'absent'))

        [device] = driver.discover()
        driver.discover()

        self.assertEqual({}, device.vendor_board_info)
        self.assertRaises(driver_base.ReadbackFailed, driver.loaded,
                          pci_controlpath(XILINX_CARD))


class TestReadbackRule(driver_test.SysfsDriverTestCase):

    def test_an_image_id_decides_when_the_region_reports_one(self):
        function = str(uuid.uuid4())
        self.assertIsNone(driver_base.readback_problem(
            driver_base.Readback('image-1', 'ffff'), 'image-1', function))
        self.assertEqual(
            'verification failed: the region reports image image-2 and '
            'function %s, not image image-1 (function %s)'
            % (uuid.UUID(function).hex, function),
            driver_base.readback_problem(
                driver_base.Readback('image-2', uuid.UUID(function).hex),
                'image-1', function))

    def test_a_region_reporting_nothing_fails(self):
        self.assertEqual(
            'verification failed: the region reports neither an image nor '
            'a function id, not image image-1',
            driver_base.readback_problem(driver_base.Readback(), 'image-1'))

    def test_a_driver_that_cannot_read_back_is_taken_at_its_word(self):
        class Blind(driver_base.Driver):
            def discover(self):
                return []

            def program(self, *args, **kwargs):
                return None

        self.assertIsNone(programming.verify(
            Blind(), pci_controlpath(XILINX_CARD), None, 'image-1', None))
