"""The NVIDIA and generic PCI drivers' health: AER counters of each
function in a recorded sysfs tree, read at every discovery; and the AER
parsing itself."""

import json
import shutil

from cyborg.agent.drivers import aer
from cyborg.agent.drivers import base as driver_base
from cyborg.agent.drivers.gpu import nvidia
from cyborg.agent.drivers.pci import generic
from cyborg.tests import base
from cyborg.tests.unit.agent.drivers import driver_test

T4 = 'bus/pci/devices/0000:3d:00.0/'
V100 = 'bus/pci/devices/0000:af:00.0/'
HEALTHY = ('healthy', None)


def aer_file(total, kind='FATAL'):
    """An aer_dev_* file as the kernel writes it (a TOTAL line last)."""
    return ('Undefined 0\nDLP %d\nSDES 0\nTLP 0\nFCP 0\nCmpltTO 0\n'
            'TOTAL_ERR_%s %d' % (total, kind, total))


class TestNvidiaHealth(driver_test.SysfsDriverTestCase):

    def setUp(self):
        super().setUp()
        self.tree = self.use_host('host_accelerators')
        self.driver = nvidia.NvidiaGPUDriver(sysfs_root=self.tree.root)

    def healths(self):
        return [(device.health, device.health_reason)
                for device in self.driver.discover()]

    def counts(self, prefix, fatal, nonfatal, correctable=0):
        self.tree.write(prefix + 'aer_dev_fatal', aer_file(fatal))
        self.tree.write(prefix + 'aer_dev_nonfatal',
                        aer_file(nonfatal, 'NONFATAL'))
        self.tree.write(prefix + 'aer_dev_correctable',
                        aer_file(correctable, 'COR'))

    def test_without_aer_files_gpus_are_healthy(self):
        self.assertEqual([HEALTHY, HEALTHY], self.healths())
        self.assertEqual([HEALTHY, HEALTHY], self.healths())
        self.assertEqual('', self.log.output)

    def test_counts_before_the_first_discovery_are_no_fault(self):
        self.counts(T4, fatal=2, nonfatal=5, correctable=9)
        self.assertEqual([HEALTHY, HEALTHY], self.healths())

    def test_grown_non_fatal_count_degrades_then_healthy_again(self):
        self.counts(T4, 0, 1)
        self.healths()
        self.counts(T4, 0, 3, correctable=7)
        self.assertEqual(
            [('degraded', 'PCIe AER: 2 new non-fatal error(s) (3 in all)'),
             HEALTHY], self.healths())
        # Nothing new: healthy (the conductor counts it towards recovery).
        self.assertEqual([HEALTHY, HEALTHY], self.healths())

    def test_grown_fatal_count_fails_and_wins_over_non_fatal(self):
        self.counts(V100, 0, 0)
        self.healths()
        self.counts(V100, 1, 4)
        self.assertEqual(
            [HEALTHY, ('failed', 'PCIe AER: 1 new fatal error(s) '
                                 '(1 in all)')], self.healths())

    def test_only_correctable_errors_are_no_fault(self):
        self.counts(T4, 0, 0, 0)
        self.healths()
        self.counts(T4, 0, 0, 40)
        self.assertEqual([HEALTHY, HEALTHY], self.healths())

    def test_a_vanished_gpu_is_not_reported_and_starts_over_on_return(self):
        self.counts(V100, 0, 0)
        self.healths()
        saved = self.tree.root + '/saved'
        shutil.move(self.tree.root + '/' + V100.rstrip('/'), saved)
        devices = self.driver.discover()
        self.assertEqual(['0000:3d:00.0'], [
            driver_base.pci_address(device.controlpath_id.cpid_info)
            for device in devices])
        # Back after a reset with higher counts: its first sight again.
        shutil.move(saved, self.tree.root + '/' + V100.rstrip('/'))
        self.counts(V100, 3, 3)
        self.assertEqual([HEALTHY, HEALTHY], self.healths())


class TestParse(base.TestCase):

    def test_total_line_or_sum(self):
        self.assertEqual(4, aer.parse_counts(aer_file(4)))
        self.assertEqual(3, aer.parse_counts('DLP 1\nTLP 2\n'))
        self.assertIsNone(aer.parse_counts('garbage\n'))
        self.assertIsNone(aer.parse_counts(''))

    def test_health_of_missing_counts_is_healthy(self):
        self.assertEqual(('healthy', None), aer.health_of(
            {'fatal': None, 'nonfatal': 1}, {'fatal': 3, 'nonfatal': 1}))


class TestGenericPCIHealth(driver_test.SysfsDriverTestCase):
    """The generic PCI driver reads the same AER counters."""

    def test_grown_counts_of_a_whitelisted_function(self):
        tree = self.use_host('host_accelerators')
        self.flags(group='pci_driver', passthrough_whitelist=json.dumps(
            [{'address': '0000:af:00.0'}]))
        driver = generic.GenericPCIDriver(sysfs_root=tree.root)
        tree.write(V100 + 'aer_dev_nonfatal', aer_file(1, 'NONFATAL'))
        [device] = driver.discover()
        self.assertEqual(HEALTHY, (device.health, device.health_reason))
        tree.write(V100 + 'aer_dev_nonfatal', aer_file(2, 'NONFATAL'))
        [device] = driver.discover()
        self.assertEqual(
            ('degraded', 'PCIe AER: 1 new non-fatal error(s) (2 in all)'),
            (device.health, device.health_reason))
