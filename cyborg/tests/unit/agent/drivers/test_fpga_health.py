"""The FPGA drivers' health: what OPAE's fpgainfo and XRT's xbmgmt report
of a card's errors, read at every discovery through scripted stand-in
executables, and the parsing of their output."""

import time

from cyborg.agent.drivers.fpga import health
from cyborg.agent.drivers.fpga import intel
from cyborg.agent.drivers.fpga import xilinx
from cyborg.tests import base
from cyborg.tests.unit.agent.drivers import driver_test
from cyborg.tests.unit.agent.drivers import test_program_command

HEALTHY = ('healthy', None)

FPGAINFO = '''//****** FME ERRORS ******//
Object Id                        : 0xF000000
PCIe s:b:d.f                     : 0000:5E:00.0
Device Id                        : 0x09C4
Errors                           : 0x0
Next Error                       : 0x0
First Error                      : 0x0
PCIe0 Errors                     : 0x0
Catfatal Errors                  : %s
Nonfatal Errors                  : %s
//****** PORT ERRORS ******//
Object Id                        : 0xEF00000
Errors                           : %s
First Error                      : 0x0
'''

EXAMINE = '''Device : [0000:3b:00.0]

Flashable partitions running on FPGA
  Platform             : xilinx_u250_gen3x16_xdma_shell_3_1
  Platform UUID        : 0x8cdbcd47b3f0b56d1d8b5e5f1b3f0b7e
  Interface UUID       : 0x19e3f2b1c40cbd9e0e6c9b4b7d8f3b44
Firewall
  Level                : %s
Asynchronous Errors
  Time                      Class        Module       Severity   Error Code
%s'''


def fpgainfo(catfatal='0x0', nonfatal='0x0', port='0x0'):
    return FPGAINFO % (catfatal, nonfatal, port)


def examine(level='0', errors=''):
    return EXAMINE % (level, errors)


class TestFpgainfoHealth(base.TestCase):

    def test_all_zero_is_healthy(self):
        self.assertEqual(HEALTHY, health.fpgainfo_health(fpgainfo()))
        self.assertEqual(HEALTHY, health.fpgainfo_health(''))

    def test_a_catastrophic_error_fails(self):
        self.assertEqual(
            ('failed', 'fpgainfo: FME catfatal errors 0x800, '
                       'FME nonfatal errors 0x1'),
            health.fpgainfo_health(fpgainfo('0x800', '0x1')))

    def test_other_errors_degrade(self):
        self.assertEqual(('degraded', 'fpgainfo: FME nonfatal errors 0x4'),
                         health.fpgainfo_health(fpgainfo(nonfatal='0x4')))
        self.assertEqual(('degraded', 'fpgainfo: PORT errors 0x2'),
                         health.fpgainfo_health(fpgainfo(port='0x2')))
        # Not a register: no opinion.
        self.assertEqual(HEALTHY, health.fpgainfo_health(
            fpgainfo(nonfatal='n/a')))


class TestXbmgmtHealth(base.TestCase):

    def test_quiet_card_is_healthy(self):
        self.assertEqual(HEALTHY, health.xbmgmt_health(examine()))
        self.assertEqual(HEALTHY, health.xbmgmt_health(
            examine(errors='  No errors\n')))
        self.assertEqual(HEALTHY, health.xbmgmt_health(
            examine(errors='  No asynchronous errors found\n')))
        self.assertEqual(HEALTHY, health.xbmgmt_health(''))

    def test_a_tripped_firewall_fails(self):
        found = health.xbmgmt_health(examine('2 (0x2)'))
        self.assertEqual('failed', found[0])
        self.assertIn('level 2', found[1])
        self.assertEqual('failed', health.xbmgmt_health(
            'Firewall Level : 1\n')[0])

    def test_an_asynchronous_error_degrades(self):
        line = 'Mon Dec  7 10:00  CLASS_AIE  MODULE_AIE  CRITICAL  ERR_BAD'
        self.assertEqual(
            ('degraded', 'xbmgmt: asynchronous error: ' + line),
            health.xbmgmt_health(examine(errors='  %s\n' % line)))


class TestDriversReadHealth(driver_test.SysfsDriverTestCase):
    """The drivers run their tools at every discovery."""

    def setUp(self):
        super().setUp()
        self.tree = self.use_host('host_accelerators')
        self.directory = self.tree.root
        self.fpgainfo = test_program_command.StandIn(self.directory,
                                                     'fpgainfo')
        self.xbmgmt = test_program_command.StandIn(self.directory, 'xbmgmt')

    def intel(self, **kwargs):
        kwargs.setdefault('fpgainfo_path', self.fpgainfo.path)
        return intel.IntelFPGADriver(sysfs_root=self.tree.root, **kwargs)

    def healths(self, driver):
        return [(device.health, device.health_reason)
                for device in driver.discover()]

    def test_intel_runs_fpgainfo_per_card_at_every_discovery(self):
        driver = self.intel()
        self.assertEqual([HEALTHY, HEALTHY], self.healths(driver))
        self.fpgainfo.behave(stdout=fpgainfo(nonfatal='0x4'))
        self.assertEqual(
            [('degraded', 'fpgainfo: FME nonfatal errors 0x4')] * 2,
            self.healths(driver))
        self.fpgainfo.behave(stdout=fpgainfo(catfatal='0x1'))
        self.assertEqual('failed', self.healths(driver)[0][0])
        self.assertEqual(
            ['errors', 'all', '--bus', '0x5e', '--device', '0x00',
             '--function', '0x0'], self.fpgainfo.runs[0])
        self.assertEqual(6, len(self.fpgainfo.runs))

    def test_intel_without_fpgainfo_reports_healthy(self):
        failing = self.intel()
        self.fpgainfo.behave(exit=3, stderr='no such device')
        self.assertEqual([HEALTHY, HEALTHY], self.healths(failing))
        self.assertEqual([HEALTHY, HEALTHY], self.healths(
            self.intel(fpgainfo_path=self.directory + '/missing')))
        runs = len(self.fpgainfo.runs)
        self.assertEqual([HEALTHY, HEALTHY],
                         self.healths(self.intel(fpgainfo_path='')))
        self.assertEqual(runs, len(self.fpgainfo.runs))
        self.assertEqual('', self.log.output)

    def test_a_hanging_fpgainfo_is_cut_short(self):
        self.patch(intel, 'ERRORS_TIMEOUT', 0.5)
        driver = self.intel()
        self.fpgainfo.behave(sleep=30, stdout=fpgainfo(catfatal='0x1'))
        started = time.monotonic()
        self.assertEqual([HEALTHY, HEALTHY], self.healths(driver))
        self.assertLess(time.monotonic() - started, 10)

    def test_xilinx_reads_health_from_the_examination(self):
        driver = xilinx.XilinxFPGADriver(sysfs_root=self.tree.root,
                                         xbmgmt_path=self.xbmgmt.path)
        self.xbmgmt.behave(stdout=examine())
        [device] = driver.discover()
        self.assertEqual(HEALTHY, (device.health, device.health_reason))
        self.assertEqual('8cdbcd47b3f0b56d1d8b5e5f1b3f0b7e',
                         device.vendor_board_info['shell_id'])
        self.xbmgmt.behave(stdout=examine('1'))
        [device] = driver.discover()
        self.assertEqual('failed', device.health)
        # One examination per card and discovery tells shell and health.
        self.assertEqual(2, len(self.xbmgmt.runs))
        self.xbmgmt.behave(exit=1)
        [device] = driver.discover()
        self.assertEqual(HEALTHY, (device.health, device.health_reason))
