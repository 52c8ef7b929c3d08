"""Servers with accelerators booted by a real Nova onto cyborg's processes.

One ``NovaDeployment`` for the class (``base.NovaTestCase``): Nova 34 with
its fake virt driver, Neutron, Keystone, Placement and Glance, and
cyborg-api, -conductor and -agent as separate processes over RabbitMQ and
MariaDB, the regions' providers nested under Nova's compute node.
"""

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
