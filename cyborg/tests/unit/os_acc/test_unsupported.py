"""live_migrate and snapshot: refused with accelerators, from the flavor
alone; no RPC, no database (os-acc is not even configured by them)."""

from cyborg import rpc
from cyborg.tests import base
from cyborg.tests.unit.os_acc import compute_node
from os_acc import api as os_acc_api
from os_acc import arguments
import os_acc

INSTANCE = {'uuid': 'E7A3C1B2-0F4D-4E5A-9B8C-7D6E5F4A3B2C', 'name': 'vm-1'}
OPERATIONS = (('Live migration', os_acc.live_migrate),
              ('Snapshot', os_acc.snapshot))


class UnsupportedOperationsTests(base.TestCase):

    def setUp(self):
        super().setUp()
        compute_node.reset_os_acc()
        self.addCleanup(compute_node.reset_os_acc)

    def test_a_flavor_with_accelerators_is_refused(self):
        for specs in ({'accel:device_profile': 'fpga', 'resources:VCPU': '2'},
                      {'resources:FPGA': '1'},
                      {'resources1:CUSTOM_ACCELERATOR_AES': '1'},
                      {'resources:VGPU': '1',
                       'accel:bitstream_id':
                           '0b1c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e'}):
            for operation, call in OPERATIONS:
                error = self.assertRaises(os_acc.Unsupported, call, INSTANCE,
                                          specs)
                self.assertIsInstance(error, os_acc.OsAccError)
                self.assertEqual((operation, INSTANCE['uuid'].lower()),
                                 (error.operation, error.instance_uuid))
                self.assertTrue(str(error).startswith(
                    '%s of instance %s is not supported with accelerators: '
                    % (operation, INSTANCE['uuid'].lower())), str(error))
                self.assertIn(
                    {'Live migration': 'cold migrate it instead',
                     'Snapshot': 'the instance keeps its accelerators'}[
                         operation], error.reason)
        self.assertIsNone(rpc.TRANSPORT)
        self.assertFalse(os_acc_api._State.configured)

    def test_live_migration_says_to_cold_migrate(self):
        error = self.assertRaises(os_acc.Unsupported, os_acc.live_migrate,
                                  INSTANCE, {'resources:FPGA': '1'})
        self.assertIn('cold migrate', str(error))

    def test_a_flavor_without_accelerators_has_nothing_to_refuse(self):
        for specs in ({}, {'resources:VCPU': '2', 'hw:cpu_policy': 'dedicated',
                           'trait:HW_CPU_X86_AVX2': 'required'},
                      {'resources:FPGA': '0'}):
            for _, call in OPERATIONS:
                self.assertIsNone(call({'uuid': INSTANCE['uuid']}, specs))

    def test_malformed_arguments_are_refused_as_plug_refuses_them(self):
        cases = [
            ({'name': 'vm'}, {}, ValueError,
             "instance_info['uuid'] is required"),
            ('vm-1', {}, TypeError, 'instance_info must be a dict'),
            (INSTANCE, ['resources:FPGA'], TypeError,
             'flavor_extra_specs must be a dict'),
            (INSTANCE, {'resources:FPGA': 'one'}, ValueError,
             "flavor_extra_specs['resources:FPGA'] must be an integer"),
            (INSTANCE, {'accel:profile': 'x'}, ValueError,
             "unknown key 'accel:profile'"),
        ]
        for instance, specs, error_class, message in cases:
            for _, call in OPERATIONS:
                error = self.assertRaises(error_class, call, instance, specs)
                self.assertNotIsInstance(error, arguments.NoAccelerator)
                self.assertIn(message, str(error))

    def test_plug_still_refuses_a_flavor_without_accelerators(self):
        error = self.assertRaises(ValueError, arguments.accelerator_request,
                                  {'resources:VCPU': '1'})
        self.assertIsInstance(error, arguments.NoAccelerator)
        self.assertIn('ask for no accelerator', str(error))
