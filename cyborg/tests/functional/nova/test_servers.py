"""Servers with accelerators booted by a real Nova onto cyborg's processes.

One ``NovaDeployment`` for the class (``base.NovaTestCase``): Nova 34 with
its fake virt driver, Neutron, Keystone, Placement and Glance, and
cyborg-api, -conductor and -agent as separate processes over RabbitMQ and
MariaDB, the regions' providers nested under Nova's compute node.
"""

import os
import uuid

from cyborg.tests.functional.nova import base
from cyborg.tests.functional.nova import deployment


def region_profile():
    """The groups of a profile asking for one FPGA of the Intel region."""
    return [{'resources:FPGA': '1',
             'trait:%s' % deployment.region_trait(deployment.REGION_ID):
             'required'}]


class ServersWithAcceleratorsTest(base.NovaTestCase):

    def test_boot_binds_the_allocated_region_and_delete_frees_it(self):
        flavor = self.make_flavor(self.make_profile(region_profile()))
        events = len(self.deployment.nova.events_answered())
        server_id = self.boot(flavor)
        self.wait_for_server(server_id, 'ACTIVE')

        arq = self.assert_bound(server_id)
        region = arq['device_rp_uuid']
        # The driver was handed that ARQ, with its attach handle.
        self.assertEqual([('spawn', [arq['uuid']])],
                         self.driver_calls(server_id))
        handed = self.last_accel_info(server_id)[0]
        self.assertEqual((arq['attach_handle_type'],
                          arq['attach_handle_info']),
                         (handed['attach_handle_type'],
                          handed['attach_handle_info']))

        # cyborg told Nova of the bind (accelerator-request-bound) with a
        # token and policy Nova accepts; whether Nova could route it to the
        # compute depends on how far the boot got by then (200 or 207).
        answered = self.deployment.wait_until(
            lambda: self.deployment.nova.events_answered()[events:],
            'the accelerator-request-bound event at nova-api')
        self.assertEqual([], [status for status in answered
                              if status not in (200, 207)], answered)

        self.delete(server_id)
        self.wait_until_released(server_id)
        self.assertEqual([], [arq for arq in self.all_arqs()
                              if arq['device_rp_uuid'] == region])

    def test_operations_nova_allows_keep_or_renew_the_binding(self):
        flavor = self.make_flavor(self.make_profile(region_profile()))
        server_id = self.boot(flavor)
        self.wait_for_server(server_id, 'ACTIVE')
        arq = self.assert_bound(server_id)

        def same_arq(action, status, call=None):
            """After ``action`` the server shows ``status`` and keeps its
            ARQ, Bound as before; ``call``: the driver call it made, handed
            that ARQ."""
            calls = len(self.driver_calls(server_id))
            self.action(server_id, action)
            self.wait_for_server(server_id, status)
            self.assertEqual(arq['uuid'], self.assert_bound(
                server_id, arq['device_rp_uuid'])['uuid'], action)
            made = self.driver_calls(server_id)[calls:]
            if call is not None:
                self.assertIn((call, [arq['uuid']]), made, action)

        same_arq({'reboot': {'type': 'SOFT'}}, 'ACTIVE', 'reboot-soft')
        same_arq({'reboot': {'type': 'HARD'}}, 'ACTIVE', 'reboot-hard')
        same_arq({'os-stop': None}, 'SHUTOFF')
        same_arq({'os-start': None}, 'ACTIVE', 'power_on')
        same_arq({'pause': None}, 'PAUSED')
        same_arq({'unpause': None}, 'ACTIVE')
        same_arq({'rebuild': {'imageRef': self.deployment.image_id}},
                 'ACTIVE', 'spawn')
        # Shelved but not offloaded ([DEFAULT] shelved_offload_time = -1):
        # still on its host, its accelerator kept.
        same_arq({'shelve': None}, 'SHELVED')

        # Offloaded: Nova deletes the ARQ and the allocations; the handle
        # is free again.
        self.action(server_id, {'shelveOffload': None}, admin=True)
        self.wait_for_server(server_id, 'SHELVED_OFFLOADED')
        self.assertEqual([], self.arqs(server_id))
        self.assertEqual({}, self.allocations(server_id))
        self.assertEqual([], self.handles_in_use(arq['device_rp_uuid']))

        # Unshelved: scheduled again, a new ARQ Bound on the region
        # Placement allocated this time, handed to the driver's spawn.
        calls = len(self.driver_calls(server_id))
        self.action(server_id, {'unshelve': None})
        self.wait_for_server(server_id, 'ACTIVE')
        renewed = self.assert_bound(server_id)
        self.assertNotEqual(arq['uuid'], renewed['uuid'])
        self.assertEqual([('spawn', [renewed['uuid']])],
                         self.driver_calls(server_id)[calls:])

    def test_operations_nova_refuses_change_nothing(self):
        profile = self.make_profile(region_profile())
        flavor = self.make_flavor(profile)
        bigger = self.make_flavor(profile)
        server_id = self.boot(flavor)
        server = self.wait_for_server(server_id, 'ACTIVE')
        arq = self.assert_bound(server_id)
        allocations = self.allocations(server_id)

        for action, admin in (
                ({'suspend': None}, False),
                ({'resize': {'flavorRef': bigger}}, False),
                ({'migrate': None}, True),
                ({'os-migrateLive': {'host': None,
                                     'block_migration': 'auto'}}, True)):
            answer = self.action(server_id, action, expected=400,
                                 admin=admin).json()
            self.assertIn('accelerators', str(answer), action)
            self.assertEqual(
                ('ACTIVE', None, server['OS-EXT-SRV-ATTR:host']),
                self._state(server_id), action)
            self.assertEqual(arq, self.assert_bound(server_id), action)
            self.assertEqual(allocations, self.allocations(server_id),
                             action)

    def _state(self, server_id):
        server = self.server(server_id)
        return (server['status'], server['OS-EXT-STS:task_state'],
                server['OS-EXT-SRV-ATTR:host'])

    def test_more_boots_than_regions_fill_them_and_fail_the_rest(self):
        flavor = self.make_flavor(self.make_profile(region_profile()))
        # One boot after the other: boots at once race for the same
        # allocation candidates, and Nova's scheduler, with no other host
        # to fall back on, answers a lost claim (Placement's 409) with
        # NoValidHost although a region is free. That is Nova's behaviour,
        # not what this test is about.
        ended = {}
        for _ in range(deployment.CARDS + 1):
            server_id = self.boot(flavor)
            ended[server_id] = self.wait_for_end(server_id)

        active = [server_id for server_id, server in ended.items()
                  if server['status'] == 'ACTIVE']
        failed = [server_id for server_id, server in ended.items()
                  if server['status'] == 'ERROR']
        self.assertEqual((deployment.CARDS, 1), (len(active), len(failed)),
                         ended)
        # One region each, every region of the profile taken.
        regions = {self.assert_bound(server_id)['device_rp_uuid']
                   for server_id in active}
        self.assertEqual(deployment.CARDS, len(regions))
        # The one left over: no valid host, and nothing held for it.
        self.assertIn('No valid host', ended[failed[0]]['fault']['message'])
        self.assertEqual([], self.arqs(failed[0]))
        self.assertEqual({}, self.allocations(failed[0]))
        self.assertEqual(sorted(active), sorted(
            arq['instance_uuid'] for arq in self.all_arqs()))

        # Deleting one frees its region, which the next server gets.
        freed = self.region_allocated(active[0])
        self.delete(active[0])
        self.wait_until_released(active[0])
        self.assertEqual([], self.handles_in_use(freed))
        server_id = self.boot(flavor)
        self.wait_for_server(server_id, 'ACTIVE')
        self.assert_bound(server_id, freed)

    def test_profile_with_a_bitstream_programs_the_region_at_boot(self):
        function_uuid = str(uuid.uuid4())
        region_id = deployment.PROGRAM_REGION_ID
        bitstream = self.deployment.upload_image(
            'aes-%s' % uuid.uuid4().hex[:8], os.urandom(4096), {
                'bs-name': 'aes-128', 'bs-uuid': str(uuid.uuid4()),
                'vendor': '0x10ee', 'board': 'u250', 'version': '1.0',
                'driver_ver': '1.0', 'driver_path': '/opt/xilinx',
                'region_uuid': region_id, 'function_uuid': function_uuid,
                'function_name': 'aes-128'}, tags=['FPGA'])
        region = self.deployable_of_region(region_id)
        self.assertIsNone(region['bitstream_id'])
        profile = self.make_profile([{
            'resources:FPGA': '1',
            'trait:%s' % deployment.region_trait(region_id): 'required',
            'accel:bitstream_id': bitstream}], prefix='aes')

        server_id = self.boot(self.make_flavor(profile))
        self.wait_for_server(server_id, 'ACTIVE')
        self.assert_bound(server_id, region['rp_uuid'])
        # Programmed before the handle was attached: the deployable holds
        # the bitstream, and the agent's next report shows its function.
        self.assertEqual(bitstream,
                         self.deployable_of_region(region_id)['bitstream_id'])
        trait = 'CUSTOM_FPGA_FUNCTION_ID_' + function_uuid.replace(
            '-', '').upper()
        self.deployment.wait_until(
            lambda: trait in self.traits(region['rp_uuid']),
            'the function of bitstream %s in Placement' % bitstream)
