"""os-acc's plug and unplug against a real conductor and agent on fake://.

What a compute driver sees (the attachments, the exceptions) is checked
against what the database holds (ARQs, attach handles in use, device
profiles), including across a restart of the conductor or the agent.
"""

from concurrent import futures
import datetime
import uuid

import sqlalchemy as sa

from cyborg.conductor import os_acc_calls
from cyborg.tests.unit.os_acc import compute_node
from cyborg.tests.unit.db import records
import os_acc

FPGA_SPECS = compute_node.FPGA_SPECS
ARQ = compute_node.ARQ


def instance_info(name='vm'):
    return {'uuid': str(uuid.uuid4()), 'name': name,
            'project_id': 'project-1', 'image_uuid': str(uuid.uuid4())}


class PlugTests(compute_node.ComputeNodeTestsBase):

    def test_plug_binds_one_handle_and_returns_its_pci_address(self):
        instance = instance_info()
        plugged = os_acc.plug(instance, {'uuid': self.providers[0]},
                              FPGA_SPECS)

        rows = self.arq_rows(instance['uuid'])
        self.assertEqual(['Bound'], [row.state for row in rows])
        self.assertEqual((compute_node.HOST, self.providers[0], 'project-1'),
                         (rows[0].hostname, rows[0].device_rp_uuid,
                          rows[0].project_id))
        # Card 0 is on bus 0x10, its VFs on devices 01 to 1f.
        self.assertEqual([{'pci_id': '0000:10:01.0'}], plugged)
        self.assertEqual([rows[0].attach_handle_id],
                         self.handles_in_use(self.providers[0]))

    def test_a_vgpu_plug_returns_the_mediated_device(self):
        instance = instance_info()
        plugged = os_acc.plug(instance, {'uuid': self.providers[3]},
                              compute_node.VGPU_SPECS)

        row = self.arq_rows(instance['uuid'])[0]
        handle = self.query(sa.select(compute_node.AttachHandle).where(
            compute_node.AttachHandle.c.id == row.attach_handle_id))[0]
        self.assertEqual('MDEV', handle.attach_type)
        self.assertEqual(1, len(plugged))
        self.assertEqual({'mdev_uuid'}, set(plugged[0]))
        self.assertIn(plugged[0]['mdev_uuid'], handle.attach_info)

    def test_one_entry_per_accelerator(self):
        instance = instance_info()
        plugged = os_acc.plug(instance, {'uuid': self.providers[1]},
                              {'resources:FPGA': '3'})

        self.assertEqual(3, len(plugged))
        self.assertEqual(3, len({entry['pci_id'] for entry in plugged}))
        self.assertEqual(3, len(self.handles_in_use(self.providers[1])))

    def test_a_second_plug_returns_the_same_attachments(self):
        instance = instance_info()
        first = os_acc.plug(instance, {'uuid': self.providers[0]}, FPGA_SPECS)
        # The extra specs in another order are the same request.
        second = os_acc.plug(instance, {'uuid': self.providers[0]},
                             dict(reversed(list(FPGA_SPECS.items()))))

        self.assertEqual(first, second)
        self.assertEqual(1, len(self.arq_rows(instance['uuid'])))
        self.assertEqual(1, len(self.handles_in_use()))
        self.assertEqual(1, len(self.implicit_profiles()))

    def test_the_implicit_profile_is_made_once_and_reused(self):
        for _ in range(3):
            os_acc.plug(instance_info(), {'uuid': self.providers[0]},
                        FPGA_SPECS)

        names = [row.name for row in self.implicit_profiles()]
        self.assertEqual([os_acc_calls.implicit_profile_name(
            [{'resources:FPGA': '1',
              'trait:CUSTOM_FAKE_DEVICE': 'required'}])], names)
        self.assertEqual(3, len(self.handles_in_use()))

    def test_a_named_device_profile_is_used(self):
        profile = records.make_device_profile(self.context)
        instance = instance_info()
        os_acc.plug(instance, {'uuid': self.providers[0]},
                    {'accel:device_profile': profile.name,
                     'resources:VCPU': '2'})

        row = self.arq_rows(instance['uuid'])[0]
        self.assertEqual(profile.id, row.device_profile_id)
        self.assertEqual([], self.implicit_profiles())

    def test_an_unknown_device_profile_is_refused(self):
        error = self.assertRaises(
            os_acc.DeviceProfileNotFound, os_acc.plug, instance_info(),
            {'uuid': self.providers[0]}, {'accel:device_profile': 'nope'})

        self.assertIsInstance(error, ValueError)
        self.assertIn('accel:device_profile', str(error))
        self.assertEqual([], self.arq_rows())

    def test_plugging_to_another_provider_is_a_conflict(self):
        instance = instance_info()
        os_acc.plug(instance, {'uuid': self.providers[0]}, FPGA_SPECS)

        error = self.assertRaises(os_acc.PlugConflict, os_acc.plug, instance,
                                  {'uuid': self.providers[1]}, FPGA_SPECS)

        self.assertIn('unplug it first', str(error))
        self.assertEqual([self.providers[0]],
                         [row.device_rp_uuid
                          for row in self.arq_rows(instance['uuid'])])

    def test_a_failed_prepare_leaves_nothing_held(self):
        instance = instance_info()
        error = self.assertRaises(
            os_acc.PlugFailed, os_acc.plug, instance,
            {'uuid': self.providers[2]}, FPGA_SPECS)

        self.assertEqual(instance['uuid'], error.instance_uuid)
        self.assertEqual(1, len(error.reasons))
        self.assertIn('simulated failure', error.reasons[0])
        self.assertEqual([], self.arq_rows())
        self.assertEqual([], self.handles_in_use())

    def test_a_provider_without_free_handles_fails_cleanly(self):
        instance = instance_info()
        error = self.assertRaises(
            os_acc.PlugFailed, os_acc.plug, instance,
            {'uuid': self.providers[1]}, {'resources:FPGA': '11'})

        self.assertEqual(1, len(error.reasons))
        self.assertIn('no free attach handle', error.reasons[0])
        self.assertEqual([], self.arq_rows())
        self.assertEqual([], self.handles_in_use())

    def test_an_unknown_provider_fails(self):
        error = self.assertRaises(
            os_acc.PlugFailed, os_acc.plug, instance_info(),
            {'uuid': str(uuid.uuid4())}, FPGA_SPECS)

        self.assertIn('no deployable has resource provider', str(error))
        self.assertEqual([], self.arq_rows())

    def test_unplug_releases_and_counts(self):
        instance = instance_info()
        os_acc.plug(instance, {'uuid': self.providers[1]},
                    {'resources:FPGA': '2'})

        released = os_acc.unplug({'uuid': instance['uuid'],
                                  'name': instance['name']})

        self.assertEqual(2, released)
        self.assertEqual([], self.arq_rows())
        self.assertEqual([], self.handles_in_use())
        # The agent was asked to give back what it prepared.
        self.assertEqual(2, len(self.driver.releases))
        self.assertEqual(0, os_acc.unplug(instance))

    def test_unplug_of_an_unknown_instance_returns_zero(self):
        self.assertEqual(0, os_acc.unplug({'uuid': str(uuid.uuid4()),
                                           'name': 'never-plugged'}))

    def test_plug_after_unplug_binds_again(self):
        instance = instance_info()
        os_acc.plug(instance, {'uuid': self.providers[0]}, FPGA_SPECS)
        os_acc.unplug(instance)

        plugged = os_acc.plug(instance, {'uuid': self.providers[1]},
                              FPGA_SPECS)

        self.assertEqual([{'pci_id': '0000:11:01.0'}], plugged)
        self.assertEqual(1, len(self.handles_in_use()))


class RestartTests(compute_node.ComputeNodeTestsBase):
    """What plug recorded survives a restart of the conductor or agent."""

    def test_a_restarted_conductor_and_agent_see_the_same_attachments(self):
        instance = instance_info()
        first = os_acc.plug(instance, {'uuid': self.providers[0]},
                            FPGA_SPECS)
        handles = self.handles_in_use()

        self.restart_conductor()
        self.restart_agent()
        os_acc.initialize(timeout=10)
        second = os_acc.plug(instance, {'uuid': self.providers[0]},
                             FPGA_SPECS)

        self.assertEqual(first, second)
        self.assertEqual(handles, self.handles_in_use())
        self.assertEqual(1, len(self.arq_rows(instance['uuid'])))
        self.assertEqual(1, os_acc.unplug(instance))
        self.assertEqual([], self.handles_in_use())

    def test_a_bind_left_by_a_stopped_conductor_is_finished(self):
        # A conductor recorded the plug and stopped before binding: its
        # ARQ is in BindStarted, leased to its binder, the lease run out.
        instance = instance_info()
        name = os_acc_calls.ensure_implicit_profile(
            self.context, [{'resources:FPGA': '1'}])
        target = os_acc_calls.Target(compute_node.HOST, self.providers[0],
                                     name)
        start = os_acc_calls._start(self.context, self.conductor.binder.lease,
                                    instance['uuid'], target)
        self.assertEqual(1, len(start.bind))
        self.restart_conductor()
        with self.database.engine.begin() as connection:
            connection.execute(sa.update(ARQ).values(
                bind_lease_expires_at=datetime.datetime(2000, 1, 1)))

        plugged = os_acc.plug(instance, {'uuid': self.providers[0]},
                              {'resources:FPGA': '1'})

        self.assertEqual([{'pci_id': '0000:10:01.0'}], plugged)
        self.assertEqual(['Bound'], [row.state for row in self.arq_rows()])
        self.assertEqual(start.bind, [row.uuid for row in self.arq_rows()])


class ConcurrentPlugTests(compute_node.ComputeNodeTestsBase):
    """Plugs from a ThreadPoolExecutor, as a compute driver may call them."""

    def test_twenty_instances_at_once(self):
        instances = [instance_info('vm-%d' % number) for number in range(20)]
        with futures.ThreadPoolExecutor(max_workers=20) as executor:
            plugs = [executor.submit(os_acc.plug, instance,
                                     {'uuid': self.providers[0]}, FPGA_SPECS)
                     for instance in instances]
            plugged = [future.result() for future in plugs]

        addresses = [entry['pci_id'] for entries in plugged
                     for entry in entries]
        self.assertEqual(20, len(set(addresses)))
        self.assertEqual(20, len(self.handles_in_use(self.providers[0])))
        self.assertEqual([], self.double_allocations())
        self.assertEqual(1, len(self.implicit_profiles()))

        with futures.ThreadPoolExecutor(max_workers=20) as executor:
            released = list(executor.map(os_acc.unplug, instances))
        self.assertEqual([1] * 20, released)
        self.assertEqual([], self.handles_in_use())
        self.assertEqual([], self.arq_rows())

    def test_twenty_plugs_over_ten_handles(self):
        instances = [instance_info('vm-%d' % number) for number in range(20)]
        with futures.ThreadPoolExecutor(max_workers=20) as executor:
            plugs = {executor.submit(os_acc.plug, instance,
                                     {'uuid': self.providers[1]},
                                     FPGA_SPECS): instance
                     for instance in instances}
        plugged = {}
        failed = {}
        for future, instance in plugs.items():
            try:
                plugged[instance['uuid']] = future.result()
            except os_acc.PlugFailed as error:
                failed[instance['uuid']] = error
        self.assertEqual((10, 10), (len(plugged), len(failed)))
        for error in failed.values():
            self.assertIn('no free attach handle', str(error))
        addresses = {entries[0]['pci_id'] for entries in plugged.values()}
        self.assertEqual(10, len(addresses))
        # The database: ten Bound ARQs, of the plugged instances, on ten
        # distinct handles in use; nothing of the failed ones.
        rows = self.arq_rows()
        self.assertEqual(['Bound'] * 10, [row.state for row in rows])
        self.assertEqual(set(plugged), {row.instance_uuid for row in rows})
        self.assertEqual(10, len({row.attach_handle_id for row in rows}))
        self.assertEqual(sorted(row.attach_handle_id for row in rows),
                         self.handles_in_use(self.providers[1]))
        self.assertEqual([], self.double_allocations())


class ConcurrentPlugMariaDBTests(ConcurrentPlugTests):
    backend = 'mysql'


class ConcurrentPlugPostgreSQLTests(ConcurrentPlugTests):
    backend = 'postgresql'
