"""The instance operations a compute node drives, each driven with os-acc and with the ARQ
API (as Nova does), on a real conductor, two agents and a real Placement.

One test per row of the table "Instance operations" of
doc/source/admin/compute-node.rst (``ROWS`` keeps them in step): each
plays the operation both ways on the same instance (``both_ways``), checks
which handles are held after each step, and that both ways end in the
same state.
"""

import pathlib
import re
import uuid

from cyborg.tests import base
from cyborg.tests.unit.os_acc import instance_life
import os_acc

HOST = instance_life.HOST
HOST_B = instance_life.HOST_B
FLAVOR = instance_life.FLAVOR
BIG_FLAVOR = instance_life.BIG_FLAVOR
# Card 0 of HOST and of HOST_B sits on bus 0x10: its first VF.
FIRST_VF = {'pci_id': '0000:10:01.0'}
# Card 1 of HOST: bus 0x11, its VFs the functions of device 01 (then 02).
CARD_1_VFS = [{'pci_id': '0000:11:01.0'}, {'pci_id': '0000:11:01.1'}]

# The first column of the table, and the test of each row.
ROWS = {
    'Start (boot)': 'test_start_binds_one_handle_per_accelerator',
    'Stop / start': 'test_stop_releases_and_start_binds_again',
    'Pause / unpause': 'test_pause_keeps_the_handles',
    'Suspend / resume': 'test_suspend_keeps_the_handles',
    'Lock / unlock': 'test_lock_keeps_the_handles',
    'Reboot (soft, hard)': 'test_reboot_reads_the_same_attachments',
    'Rebuild': 'test_rebuild_keeps_the_handles_with_a_new_image',
    'Shelve / unshelve': 'test_shelve_releases_and_unshelve_binds_elsewhere',
    'Delete / restore': 'test_delete_releases_and_restore_binds_again',
    'Resize': 'test_resize_releases_then_binds_the_new_flavor',
    'Cold migration': 'test_cold_migration_releases_then_binds_on_the_'
                      'destination',
    'Evacuate': 'test_evacuate_frees_the_handles_of_a_failed_host',
    'Live migration': 'test_live_migration_is_refused',
    'Boot from snapshot': 'test_a_snapshot_to_boot_from_is_refused',
}
GUIDE = (pathlib.Path(__file__).resolve().parents[4] / 'doc' / 'source'
         / 'admin' / 'compute-node.rst')


class InstanceOperationsTests(instance_life.InstanceLifeTestsBase):

    def _start(self, driver, instance, host=HOST, rp_uuid=None,
               flavor=FLAVOR):
        return driver.start(instance, host, rp_uuid or self.providers[0],
                            flavor)

    def _assert_nothing_held(self, instance):
        self.assertEqual([], self.held_handles(instance))
        self.assertEqual(([], []), self.held())

    def test_start_binds_one_handle_per_accelerator(self):
        def life(driver, instance):
            attached = self._start(driver, instance)
            self.assertEqual([FIRST_VF], attached)
            self.assertEqual([(HOST, self.providers[0])],
                             self.held_handles(instance))
            return [attached]

        self.both_ways(life)

    def test_stop_releases_and_start_binds_again(self):
        def life(driver, instance):
            self._start(driver, instance)
            self.assertEqual(1, driver.release(instance))
            self._assert_nothing_held(instance)
            attached = self._start(driver, instance)
            self.assertEqual([(HOST, self.providers[0])],
                             self.held_handles(instance))
            return [attached]

        self.assertEqual([[FIRST_VF]], self.both_ways(life)[0])

    def _assert_kept_without_calls(self):
        """pause, suspend, lock: neither way calls Cyborg, nothing moves
        and no agent is asked to release."""
        def life(driver, instance):
            attached = self._start(driver, instance)
            before = self.held()
            releases = len(self.driver.releases)
            # The operation and its reverse: no call either way, while the
            # agent goes on reporting its devices.
            self.assertTrue(self.agent.report_inventory(self.context))
            self.assertEqual(before, self.held())
            self.assertEqual([(HOST, self.providers[0])],
                             self.held_handles(instance))
            self.assertEqual(releases, len(self.driver.releases))
            return [attached, before]

        self.both_ways(life)

    def test_pause_keeps_the_handles(self):
        self._assert_kept_without_calls()

    def test_suspend_keeps_the_handles(self):
        self._assert_kept_without_calls()

    def test_lock_keeps_the_handles(self):
        self._assert_kept_without_calls()

    def test_reboot_reads_the_same_attachments(self):
        def life(driver, instance):
            attached = self._start(driver, instance)
            before = self.held()
            releases = len(self.driver.releases)
            # A hard reboot rebuilds the guest: the driver reads the
            # attachments again (os-acc: plug again; Nova: GET).
            again = driver.attachments(instance, HOST, self.providers[0],
                                       FLAVOR)
            self.assertEqual(attached, again)
            self.assertEqual(before, self.held())
            self.assertEqual(releases, len(self.driver.releases))
            return [again, before]

        self.both_ways(life)

    def test_rebuild_keeps_the_handles_with_a_new_image(self):
        def life(driver, instance):
            attached = self._start(driver, instance)
            before = self.held()
            rebuilt = dict(instance, image_uuid=str(uuid.uuid4()))
            again = driver.attachments(rebuilt, HOST, self.providers[0],
                                       FLAVOR)
            self.assertEqual(attached, again)
            self.assertEqual(before, self.held())
            return [again, before]

        self.both_ways(life)

    def test_shelve_releases_and_unshelve_binds_elsewhere(self):
        def life(driver, instance):
            self._start(driver, instance)
            self.assertEqual(1, driver.release(instance))
            self._assert_nothing_held(instance)
            # The scheduler chose HOST_B for the unshelve.
            attached = self._start(driver, instance, HOST_B, self.provider_b)
            self.assertEqual([(HOST_B, self.provider_b)],
                             self.held_handles(instance))
            self.assertEqual([], self.handles_in_use(self.providers[0]))
            return [attached]

        self.assertEqual([[FIRST_VF]], self.both_ways(life)[0])

    def test_delete_releases_and_restore_binds_again(self):
        def life(driver, instance):
            self._start(driver, instance)
            self.assertEqual(1, driver.release(instance))
            self._assert_nothing_held(instance)
            # Restored through the scheduler, which chose card 1.
            attached = self._start(driver, instance,
                                   rp_uuid=self.providers[1])
            self.assertEqual([(HOST, self.providers[1])],
                             self.held_handles(instance))
            return [attached]

        self.assertEqual([[CARD_1_VFS[0]]], self.both_ways(life)[0])

    def test_resize_releases_then_binds_the_new_flavor(self):
        def life(driver, instance):
            self._start(driver, instance)
            self.assertEqual(1, driver.release(instance))
            self._assert_nothing_held(instance)
            attached = self._start(driver, instance, HOST, self.providers[1],
                                   BIG_FLAVOR)
            self.assertEqual([(HOST, self.providers[1])] * 2,
                             self.held_handles(instance))
            return [attached]

        self.assertEqual([CARD_1_VFS], self.both_ways(life)[0])

    def test_cold_migration_releases_then_binds_on_the_destination(self):
        def life(driver, instance):
            self._start(driver, instance)
            self.assertEqual(1, driver.release(instance))
            self._assert_nothing_held(instance)
            attached = self._start(driver, instance, HOST_B, self.provider_b)
            self.assertEqual([(HOST_B, self.provider_b)],
                             self.held_handles(instance))
            return [attached]

        self.assertEqual([[FIRST_VF]], self.both_ways(life)[0])

    def test_evacuate_frees_the_handles_of_a_failed_host(self):
        # The failed host's agent cannot be asked to release: give up fast.
        self.conductor.releaser.timeout = 1

        def life(driver, instance):
            self._start(driver, instance)
            releases = len(self.driver.releases)
            self.stop_agent()
            self.assertEqual(1, driver.release(instance))
            self._assert_nothing_held(instance)
            self.assertEqual(releases, len(self.driver.releases))
            attached = self._start(driver, instance, HOST_B, self.provider_b)
            self.assertEqual([(HOST_B, self.provider_b)],
                             self.held_handles(instance))
            steps = [attached, self.held()]
            # The host comes back for the next way.
            self.restart_agent()
            return steps

        self.assertEqual(FIRST_VF, self.both_ways(life)[0][0][0])

    def test_live_migration_is_refused(self):
        def life(driver, instance):
            attached = self._start(driver, instance)
            before = self.held()
            if driver.name == 'os-acc':
                error = self.assertRaises(
                    os_acc.Unsupported, driver.live_migrate, instance,
                    HOST_B, self.provider_b, FLAVOR)
                self.assertEqual(('Live migration', instance['uuid']),
                                 (error.operation, error.instance_uuid))
                self.assertIn('not supported with accelerators', str(error))
                # A driver plugging on the destination anyway is refused
                # too, and nothing changes.
                self.assertRaises(os_acc.PlugConflict, driver.start,
                                  instance, HOST_B, self.provider_b, FLAVOR)
            else:
                error = self.assertRaises(
                    instance_life.Refused, driver.live_migrate, instance,
                    HOST_B, self.provider_b, FLAVOR)
                self.assertEqual(400, error.status)
                self.assertIn('already has ARQs bound', str(error.body))
            self.assertEqual(before, self.held())
            self.assertEqual([], self.handles_in_use(self.provider_b))
            return [attached, before]

        self.both_ways(life)

    def test_a_snapshot_to_boot_from_is_refused(self):
        def life(driver, instance):
            self._start(driver, instance)
            before = self.held()
            if driver.name == 'os-acc':
                error = self.assertRaises(os_acc.Unsupported, driver.snapshot,
                                          instance, FLAVOR)
                self.assertEqual('Snapshot', error.operation)
            else:
                # Cyborg is not told of snapshots or images: nothing to
                # refuse through the ARQ API.
                self.assertIsNone(driver.snapshot(instance, FLAVOR))
            self.assertEqual(before, self.held())
            return [before]

        self.both_ways(life)


class GuideTableTests(base.TestCase):
    """The guide's table of instance operations has a test per row."""

    def test_every_row_has_its_test(self):
        text = GUIDE.read_text(encoding='utf-8')
        section = text.split('\nInstance operations\n', 1)[1]
        section = re.split(r'\n[^\n]+\n-{3,}\n', section, maxsplit=1)[0]
        rows = re.findall(r'^   \* - (.+)$', section, flags=re.MULTILINE)
        # The first row is the header.
        self.assertEqual(sorted(ROWS), sorted(rows[1:]))
        for name in ROWS.values():
            self.assertTrue(callable(getattr(InstanceOperationsTests, name,
                                             None)), name)
