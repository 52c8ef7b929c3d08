"""os-acc's argument checks and result shapes: no RPC, no database.

Every refusal names the argument and key at fault; a malformed call never
reaches the conductor (os-acc is not even configured by it).
"""

import uuid

from cyborg.tests import base
from cyborg.tests.unit.os_acc import compute_node
from os_acc import api as os_acc_api
from os_acc import arguments
from os_acc import attachments
import os_acc

INSTANCE = {'uuid': 'E7A3C1B2-0F4D-4E5A-9B8C-7D6E5F4A3B2C', 'name': 'vm-1',
            'project_id': 'project-1',
            'image_uuid': '1f0e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b'}
RP = {'uuid': '5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d', 'name': 'compute-1_fpga'}
BITSTREAM = '0b1c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e'


class InstanceInfoTests(base.TestCase):

    def test_a_full_instance_is_accepted_with_uuids_in_lower_case(self):
        self.assertEqual(
            {'uuid': INSTANCE['uuid'].lower(), 'name': 'vm-1',
             'project_id': 'project-1', 'image_uuid': INSTANCE['image_uuid']},
            arguments.instance_info(INSTANCE))

    def test_only_the_uuid_is_required(self):
        self.assertEqual(
            {'uuid': INSTANCE['uuid'].lower(), 'name': None,
             'project_id': None, 'image_uuid': None},
            arguments.instance_info({'uuid': INSTANCE['uuid']}))

    def test_refusals_name_the_key(self):
        cases = [
            ([INSTANCE['uuid']], TypeError, 'instance_info must be a dict'),
            ({'name': 'vm'}, ValueError, "instance_info['uuid'] is required"),
            ({'uuid': None}, ValueError, "instance_info['uuid'] is required"),
            ({'uuid': 'vm-1'}, ValueError, "instance_info['uuid'] must be a "
                                           "UUID, not 'vm-1'"),
            ({'uuid': 42}, TypeError, "instance_info['uuid'] must be a UUID "
                                      'string, not int'),
            (dict(INSTANCE, name=7), TypeError, "instance_info['name'] must "
                                                'be a string'),
            (dict(INSTANCE, project_id=[]), TypeError,
             "instance_info['project_id'] must be a string"),
            (dict(INSTANCE, image_uuid='cirros'), ValueError,
             "instance_info['image_uuid'] must be a UUID"),
            (dict(INSTANCE, uid='x'), ValueError,
             "instance_info has unknown key 'uid'"),
        ]
        for value, error_class, message in cases:
            error = self.assertRaises(error_class, arguments.instance_info,
                                      value)
            self.assertIn(message, str(error), value)


class SelectedRpTests(base.TestCase):

    def test_the_uuid_in_lower_case(self):
        self.assertEqual(RP['uuid'], arguments.selected_rp(
            dict(RP, uuid=RP['uuid'].upper())))
        self.assertEqual(RP['uuid'], arguments.selected_rp(
            {'uuid': RP['uuid']}))

    def test_refusals_name_the_key(self):
        cases = [
            (RP['uuid'], TypeError, 'selected_rp must be a dict'),
            ({'name': 'x'}, ValueError, "selected_rp['uuid'] is required"),
            ({'uuid': 'rp-1'}, ValueError, "selected_rp['uuid'] must be a "
                                           'UUID'),
            (dict(RP, name=1), TypeError, "selected_rp['name'] must be a "
                                          'string'),
            (dict(RP, generation=3), ValueError,
             "selected_rp has unknown key 'generation'"),
        ]
        for value, error_class, message in cases:
            error = self.assertRaises(error_class, arguments.selected_rp,
                                      value)
            self.assertIn(message, str(error), value)


class ExtraSpecsTests(base.TestCase):

    def request(self, extra_specs):
        return arguments.accelerator_request(extra_specs)

    def test_a_device_profile_is_named(self):
        request = self.request({'accel:device_profile': 'fpga-aes',
                                'resources:VCPU': '2',
                                'trait:CUSTOM_X': 'required'})
        self.assertEqual(('fpga-aes', None),
                         (request.device_profile_name, request.groups))

    def test_nova_groups_become_accelerator_groups(self):
        request = self.request({
            'resources:VCPU': '2', 'resources:MEMORY_MB': '512',
            'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required',
            'trait:HW_CPU_X86_AVX2': 'required', 'hw:cpu_policy': 'dedicated',
            'resources2:PGPU': '2', 'trait2:CUSTOM_GPU_T4': 'forbidden',
            'resources1:CUSTOM_PCI': '1', 'resources3:VGPU': '0',
            'resources4:SRIOV_NET_VF': '1'})
        self.assertIsNone(request.device_profile_name)
        self.assertEqual(
            [{'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required'},
             {'resources:CUSTOM_PCI': '1'},
             {'resources:PGPU': '2', 'trait:CUSTOM_GPU_T4': 'forbidden'}],
            request.groups)

    def test_a_bitstream_goes_into_the_one_group(self):
        request = self.request({'resources:FPGA': '1',
                                'accel:bitstream_id': BITSTREAM})
        self.assertEqual([{'resources:FPGA': '1',
                           'accel:bitstream_id': BITSTREAM}], request.groups)

    def test_the_specs_are_not_changed(self):
        specs = {'resources:FPGA': '1', 'accel:function_id': 'aes'}
        copy = dict(specs)
        self.request(specs)
        self.assertEqual(copy, specs)

    def test_refusals_name_the_key(self):
        cases = [
            ([], TypeError, 'flavor_extra_specs must be a dict'),
            ({1: '1'}, TypeError, 'flavor_extra_specs keys must be strings'),
            ({'resources:FPGA': 1}, TypeError,
             "flavor_extra_specs['resources:FPGA'] must be a string"),
            ({'resources:FPGA': 'one'}, ValueError,
             "flavor_extra_specs['resources:FPGA'] must be an integer"),
            ({'resources:VCPU': '2'}, ValueError,
             'flavor_extra_specs ask for no accelerator'),
            ({'accel:profile': 'x'}, ValueError,
             "flavor_extra_specs has unknown key 'accel:profile'"),
            ({'accel:device_profile': 'p', 'accel:bitstream_id': BITSTREAM},
             ValueError, "flavor_extra_specs['accel:bitstream_id'] cannot go "
                         'with accel:device_profile'),
            ({'accel:device_profile': ' '}, ValueError,
             "flavor_extra_specs['accel:device_profile'] must name"),
            ({'resources1:FPGA': '1', 'resources2:FPGA': '1',
              'accel:function_id': 'aes'}, ValueError,
             "flavor_extra_specs['accel:function_id'] applies to one "
             'accelerator group'),
            # The device profiles API's own checks (its messages).
            ({'resources:FPGA': '1', 'accel:bitstream_id': 'aes.bin'},
             ValueError, 'accel:bitstream_id'),
            ({'resources:FPGA': '1', 'trait:CUSTOM_X': 'maybe'}, ValueError,
             'trait:CUSTOM_X'),
            ({'resources:FPGA': '1', 'accel:bitstream_id': BITSTREAM,
              'accel:function_id': 'aes'}, ValueError, 'accel:function_id'),
            ({'resources:FPGA': '2000'}, ValueError, 'resources:FPGA'),
        ]
        for value, error_class, message in cases:
            error = self.assertRaises(error_class, self.request, value)
            self.assertIn(message, str(error), value)


class CallsCheckFirstTests(base.TestCase):
    """A malformed call raises before os-acc configures anything."""

    def setUp(self):
        super().setUp()
        compute_node.reset_os_acc()
        self.addCleanup(compute_node.reset_os_acc)

    def test_plug_and_unplug_refuse_before_any_rpc(self):
        calls = [
            (os_acc.plug, ({'uuid': 'x'}, RP, {'resources:FPGA': '1'})),
            (os_acc.plug, (INSTANCE, {'uuid': 'x'}, {'resources:FPGA': '1'})),
            (os_acc.plug, (INSTANCE, RP, {'resources:FPGA': '0'})),
            (os_acc.unplug, ({'name': 'vm-1'},)),
        ]
        for function, args in calls:
            self.assertRaises(ValueError, function, *args)
        self.assertFalse(os_acc_api._State.configured)
        self.assertIsNone(os_acc_api._State.conductor)


class AttachmentShapeTests(base.TestCase):

    def test_pci_handles_give_their_address(self):
        info = {'domain': '0000', 'bus': '5E', 'device': '0', 'function': '7'}
        for attach_type in ('PCI', 'TEST_PCI'):
            self.assertEqual({'pci_id': '0000:5e:00.7'},
                             attachments.attachment(attach_type, info))

    def test_mdev_handles_give_their_mediated_device(self):
        mdev_uuid = str(uuid.uuid4())
        info = {'domain': '0000', 'bus': '12', 'device': '00',
                'function': '0', 'asked_type': 'nvidia-222',
                'mdev_uuid': mdev_uuid}
        self.assertEqual({'mdev_uuid': mdev_uuid},
                         attachments.attachment('MDEV', info))

    def test_a_list_in_the_conductors_order(self):
        answer = [{'arq_uuid': 'a', 'attach_type': 'PCI',
                   'attach_info': {'domain': '0001', 'bus': '00',
                                   'device': '1f', 'function': '1'}},
                  {'arq_uuid': 'b', 'attach_type': 'MDEV',
                   'attach_info': {'mdev_uuid': 'm'}}]
        self.assertEqual([{'pci_id': '0001:00:1f.1'}, {'mdev_uuid': 'm'}],
                         attachments.attachments(answer))

    def test_what_cannot_be_described_is_an_error(self):
        cases = [
            ('PCI', {'domain': '0000', 'bus': '5e', 'device': '00'},
             'no PCI function'),
            ('PCI', {'domain': '0000', 'bus': '100', 'device': '00',
                     'function': '0'}, 'no PCI bus'),
            ('MDEV', {'domain': '0000'}, 'has no mdev_uuid'),
            ('AFU', {}, "attach handle type 'AFU'"),
        ]
        for attach_type, info, message in cases:
            error = self.assertRaises(os_acc.OsAccError,
                                      attachments.attachment, attach_type,
                                      info)
            self.assertIn(message, str(error))
