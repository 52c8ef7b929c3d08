"""Programming through the vendors' tools (fpgaconf, xbmgmt), run as a
scripted stand-in executable that records its arguments and can fail."""

import json
import logging
import os
import stat
import sys
import time

import fixtures

from cyborg.common import vocabulary
from cyborg import conf
from cyborg.agent.drivers import base as driver_base
from cyborg.agent.drivers.fpga import intel
from cyborg.agent.drivers.fpga import xilinx
from cyborg.agent.drivers.gpu import nvidia
from cyborg.agent.drivers.pci import generic
from cyborg.tests import base
from cyborg.tests.unit.agent.drivers.driver_test import pci_controlpath

Result = vocabulary.ProgramResult

# The stand-in: appends its arguments (a JSON list) to <itself>.arguments,
# then does what <itself>.json says: sleep seconds, write files (a card
# changing in sysfs), print to stdout and stderr, kill itself with a signal
# or exit with a code.
STAND_IN = '''#!%s
import json, os, signal, sys, time
me = os.path.abspath(__file__)
with open(me + '.arguments', 'a') as record:
    record.write(json.dumps(sys.argv[1:]) + '\\n')
try:
    with open(me + '.json') as settings:
        behaviour = json.load(settings)
except FileNotFoundError:
    behaviour = {}
time.sleep(behaviour.get('sleep', 0))
for path, text in behaviour.get('write', {}).items():
    with open(path, 'w') as written:
        written.write(text)
sys.stdout.write(behaviour.get('stdout', ''))
sys.stderr.write(behaviour.get('stderr', ''))
sys.stdout.flush()
sys.stderr.flush()
if behaviour.get('signal'):
    os.kill(os.getpid(), behaviour['signal'])
sys.exit(behaviour.get('exit', 0))
''' % sys.executable


class StandIn:
    """A scripted executable at ``path``."""

    def __init__(self, directory, name):
        self.path = os.path.join(directory, name)
        with open(self.path, 'w', encoding='utf-8') as script:
            script.write(STAND_IN)
        os.chmod(self.path, os.stat(self.path).st_mode | stat.S_IXUSR)

    def behave(self, **behaviour):
        """Make the next runs sleep, print, exit or kill themselves."""
        with open(self.path + '.json', 'w', encoding='utf-8') as settings:
            json.dump(behaviour, settings)

    @property
    def runs(self):
        """The argument lists of every run so far."""
        try:
            with open(self.path + '.arguments', encoding='utf-8') as record:
                return [json.loads(line) for line in record]
        except FileNotFoundError:
            return []


class ProgramCommandTestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        self.directory = self.useFixture(fixtures.TempDir()).path
        self.log = self.useFixture(fixtures.FakeLogger(
            name='cyborg.agent.drivers', level=logging.INFO))
        self.bitstream = os.path.join(self.directory, 'aes.gbs')
        with open(self.bitstream, 'wb') as stream:
            stream.write(b'\x00bitstream')


class TestIntelProgramming(ProgramCommandTestCase):

    def setUp(self):
        super().setUp()
        self.fpgaconf = StandIn(self.directory, 'fpgaconf')
        self.flags(group='intel_fpga_driver', fpgaconf_path=self.fpgaconf.path)

    def program(self, address='0000:5e:00.0', **kwargs):
        return intel.IntelFPGADriver(sysfs_root='/nonexistent').program(
            pci_controlpath(address), self.bitstream, **kwargs)

    def test_fpgaconf_gets_the_cards_bus_device_and_function(self):
        outcome = self.program(deployable_name='fpga-0000:5e:00.0-region0')

        self.assertEqual(driver_base.ProgramOutcome(
            Result.SUCCESS, 'fpgaconf loaded %s into '
            'fpga-0000:5e:00.0-region0' % self.bitstream), outcome)
        self.assertEqual([['--bus', '0x5e', '--device', '0x00',
                           '--function', '0x0', self.bitstream]],
                         self.fpgaconf.runs)
        self.assertIn('Programming fpga-0000:5e:00.0-region0: %s --bus 0x5e'
                      % self.fpgaconf.path, self.log.output)

    def test_a_pci_domain_other_than_0_is_the_segment(self):
        self.assertTrue(self.program('0001:af:1f.7').succeeded)

        self.assertEqual([['--segment', '0x0001', '--bus', '0xaf',
                           '--device', '0x1f', '--function', '0x7',
                           self.bitstream]], self.fpgaconf.runs)

    def test_failure_exit_status_and_the_end_of_stderr(self):
        self.fpgaconf.behave(exit=2, stdout='enumerating\n',
                             stderr='Error: interface id mismatch\n'
                                    'no compatible FPGA\n')

        outcome = self.program()

        self.assertEqual(driver_base.ProgramOutcome(
            Result.FAILED, 'fpgaconf exited with 2 programming '
            'fpga-0000:5e:00.0: Error: interface id mismatch no compatible '
            'FPGA'), outcome)
        self.assertIn('Programming failed (FAILED): fpgaconf exited with 2',
                      self.log.output)

    def test_without_stderr_the_end_of_stdout_is_the_reason(self):
        self.fpgaconf.behave(exit=1, stdout='x' * 1000 + ' the end')

        outcome = self.program()

        self.assertIs(Result.FAILED, outcome.code)
        self.assertTrue(outcome.message.endswith('x the end'))
        self.assertIn(': ...xxx', outcome.message)
        self.assertLess(len(outcome.message), 600)

    def test_a_tool_killed_by_a_signal(self):
        self.fpgaconf.behave(signal=9)

        outcome = self.program()

        self.assertEqual('fpgaconf was killed by signal 9 programming '
                         'fpga-0000:5e:00.0: (no output)', outcome.message)

    def test_a_tool_past_its_time_limit_is_killed(self):
        self.fpgaconf.behave(sleep=30)
        driver = intel.IntelFPGADriver(sysfs_root='/nonexistent',
                                       program_timeout=0.5)
        start = time.monotonic()

        outcome = driver.program(pci_controlpath('0000:5e:00.0'),
                                 self.bitstream)

        self.assertLess(time.monotonic() - start, 10)
        self.assertEqual(driver_base.ProgramOutcome(
            Result.FAILED, 'fpgaconf did not finish programming '
            'fpga-0000:5e:00.0 within 0.5 seconds and was killed; the region '
            'may need programming again'), outcome)

    def test_missing_executable(self):
        absent = os.path.join(self.directory, 'absent')
        self.flags(group='intel_fpga_driver', fpgaconf_path=absent)

        outcome = self.program()

        self.assertEqual(driver_base.ProgramOutcome(
            Result.FAILED, 'programming tool %s not found (set '
            '[intel_fpga_driver] fpgaconf_path)' % absent), outcome)

    def test_a_file_that_cannot_be_run(self):
        os.chmod(self.fpgaconf.path, 0o644)

        outcome = self.program()

        self.assertIs(Result.FAILED, outcome.code)
        self.assertIn('programming tool %s cannot be run ([intel_fpga_driver]'
                      ' fpgaconf_path): ' % self.fpgaconf.path,
                      outcome.message)

    def test_missing_bitstream_file_runs_nothing(self):
        os.remove(self.bitstream)

        outcome = self.program()

        self.assertEqual(driver_base.ProgramOutcome(
            Result.INVALID_BITSTREAM, 'bitstream file %s does not exist'
            % self.bitstream), outcome)
        self.assertEqual([], self.fpgaconf.runs)

    def test_a_deployable_of_another_card_is_refused(self):
        outcome = self.program(deployable_name='fpga-0000:5e:00.1-region0')

        self.assertEqual(driver_base.ProgramOutcome(
            Result.INVALID_DEPLOYABLE, 'deployable fpga-0000:5e:00.1-region0 '
            'is not on the card at 0000:5e:00.0'), outcome)
        self.assertEqual([], self.fpgaconf.runs)

    def test_a_control_path_that_is_not_pci_is_refused(self):
        outcome = intel.IntelFPGADriver(sysfs_root='/nonexistent').program(
            driver_base.DriverControlpathId('SYSFS', {'path': '/dev/x'}),
            self.bitstream)

        self.assertIs(Result.INVALID_DEPLOYABLE, outcome.code)
        self.assertIn('is not a PCI function', outcome.message)
        self.assertEqual([], self.fpgaconf.runs)


class TestXilinxProgramming(ProgramCommandTestCase):

    def setUp(self):
        super().setUp()
        self.xbmgmt = StandIn(self.directory, 'xbmgmt')
        self.flags(group='xilinx_fpga_driver', xbmgmt_path=self.xbmgmt.path)

    def program(self, **kwargs):
        return xilinx.XilinxFPGADriver(sysfs_root='/nonexistent').program(
            pci_controlpath('0000:3b:00.0'), self.bitstream, **kwargs)

    def test_xbmgmt_loads_a_user_image_on_the_management_function(self):
        outcome = self.program(deployable_name='fpga-0000:3b:00.0')

        self.assertEqual(driver_base.ProgramOutcome(
            Result.SUCCESS, 'xbmgmt loaded %s into fpga-0000:3b:00.0'
            % self.bitstream), outcome)
        self.assertEqual([['program', '--device', '0000:3b:00.0', '--user',
                           self.bitstream]], self.xbmgmt.runs)

    def test_failure(self):
        self.xbmgmt.behave(exit=1, stderr='ERROR: xclbin is not compatible')

        outcome = self.program()

        self.assertEqual(driver_base.ProgramOutcome(
            Result.FAILED, 'xbmgmt exited with 1 programming '
            'fpga-0000:3b:00.0: ERROR: xclbin is not compatible'), outcome)

    def test_time_limit_and_path_come_from_the_options(self):
        self.xbmgmt.behave(sleep=30)
        self.flags(group='xilinx_fpga_driver', program_timeout=1)

        outcome = self.program()

        self.assertIn('xbmgmt did not finish programming fpga-0000:3b:00.0 '
                      'within 1 seconds', outcome.message)
        self.assertEqual(1, len(self.xbmgmt.runs))

    def test_missing_executable_names_the_option(self):
        self.flags(group='xilinx_fpga_driver',
                   xbmgmt_path=os.path.join(self.directory, 'absent'))

        outcome = self.program()

        self.assertIs(Result.FAILED, outcome.code)
        self.assertIn('(set [xilinx_fpga_driver] xbmgmt_path)',
                      outcome.message)


class TestOptionDefaults(base.TestCase):

    def test_tools_and_time_limits(self):
        options = conf.CONF
        self.assertEqual(('fpgaconf', 300),
                         (options.intel_fpga_driver.fpgaconf_path,
                          options.intel_fpga_driver.program_timeout))
        self.assertEqual(('/opt/xilinx/xrt/bin/xbmgmt', 300),
                         (options.xilinx_fpga_driver.xbmgmt_path,
                          options.xilinx_fpga_driver.program_timeout))


class TestNotProgrammable(base.TestCase):

    def test_gpus_and_pci_functions_are_invalid_deployables(self):
        for driver, words in (
                (nvidia.NvidiaGPUDriver(sysfs_root='/nonexistent'), 'GPUs'),
                (generic.GenericPCIDriver(sysfs_root='/nonexistent'),
                 'Plain PCI functions')):
            outcome = driver.program(pci_controlpath('0000:3d:00.0'),
                                     '/tmp/a.bin')
            self.assertEqual(driver_base.ProgramOutcome(
                Result.INVALID_DEPLOYABLE,
                '%s cannot be programmed (device 0000:3d:00.0)' % words),
                outcome)
