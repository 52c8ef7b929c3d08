"""A server booted under OpenStack Cyborg 17.0.0 survives the switch.

A real Nova boots a server with a one-FPGA device profile onto upstream's
Cyborg (``UpstreamNovaDeployment``); then upstream is stopped, its database
imported and cyborg started in its place, Nova untouched. Cyborg answers
for the server's ARQ as upstream did (same uuid, provider and handle), and
what Nova does next works on it: rebuild keeps the ARQ, shelve too,
shelve-offload deletes it and its allocation, unshelve binds a new one on
the adopted provider, and delete releases everything.
"""

from cyborg.tests.fixtures import upstream_cyborg
from cyborg.tests.functional.nova import base
from cyborg.tests.functional.nova import upstream_deployment


class UpstreamSwitchServersTest(base.NovaTestCase):

    deployment_class = upstream_deployment.UpstreamNovaDeployment

    @classmethod
    def setUpClass(cls):
        upstream_cyborg.require_upstream_venv()
        super().setUpClass()

    def test_a_server_survives_the_switch(self):
        profile = self.make_profile([{'resources:FPGA': '1',
                                      'trait:CUSTOM_FAKE_DEVICE':
                                      'required'}])
        flavor = self.make_flavor(profile)
        server_id = self.boot(flavor)
        self.wait_for_server(server_id, 'ACTIVE')
        [rp_uuid] = self.deployment.regions
        [before] = self.arqs(server_id)
        self.assertEqual(('Bound', rp_uuid, self.deployment.host),
                         (before['state'], before['device_rp_uuid'],
                          before['hostname']), before)
        # Nova bound it through upstream's API.
        self.assertRegex(self.deployment.upstream.api.log(),
                         r'"PATCH (/accelerator)?/v2/accelerator_requests '
                         r'HTTP/1\.1" 202')
        allocations = self.allocations(server_id)
        tree = self.deployment.provider_tree()

        output = self.deployment.switch()
        self.assertIn('extended_accelerator_requests: 1 inserted', output)

        self.assertEqual(tree, self.deployment.provider_tree())
        self.assertEqual({rp_uuid: self.deployment.regions[rp_uuid]},
                         self.deployment.regions)
        arq = self.assert_bound(server_id, rp_uuid)
        self.assertEqual((before['uuid'], before['attach_handle_uuid']),
                         (arq['uuid'], arq['attach_handle_uuid']))
        self.assertEqual(allocations, self.allocations(server_id))

        self.action(server_id, {'rebuild': {
            'imageRef': self.deployment.image_id}})
        self.wait_for_server(server_id, 'ACTIVE')
        self.assertEqual(before['uuid'], self.assert_bound(server_id)['uuid'])
        self.action(server_id, {'shelve': None})
        self.wait_for_server(server_id, 'SHELVED')
        self.assertEqual(before['uuid'], self.assert_bound(server_id)['uuid'])
        self.action(server_id, {'shelveOffload': None}, admin=True)
        self.wait_for_server(server_id, 'SHELVED_OFFLOADED')
        self.assertEqual([], self.arqs(server_id))
        self.assertEqual({}, self.allocations(server_id))
        self.action(server_id, {'unshelve': None})
        self.wait_for_server(server_id, 'ACTIVE')
        unshelved = self.assert_bound(server_id, rp_uuid)
        self.assertNotEqual(before['uuid'], unshelved['uuid'])
        self.delete(server_id)
        self.wait_until_released(server_id)
