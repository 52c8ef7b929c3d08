"""openstacksdk and plain HTTP against cyborg-aio.

``conn.accelerator`` must show what a plain HTTP GET shows, and take
device profiles and ARQs through their whole life; the all-in-one and its
fleet are ``clients.ClientsTestCase``'s (see there for the endpoint forms
and microversions).

openstacksdk pages with ``limit``: it follows the ``next`` link of a full
page and, after the last one, asks once more with a marker of its own;
every device comes back once. (Its debug log prints the follow-up URLs as
``limit=['1']``, a quirk of the log only: the request is ``limit=1``.)
"""

import uuid

import openstack

from cyborg.tests.functional.aio import clients


class TestOpenStackSDK(clients.ClientsTestCase):
    """The fleet through plain HTTP and openstacksdk; profiles and ARQs
    through openstacksdk."""

    # -- Helpers -------------------------------------------------------

    def sdk(self, endpoint=None, microversion=None):
        """An openstacksdk Connection to the all-in-one, without Keystone."""
        options = {}
        if microversion:
            options['accelerator_default_microversion'] = microversion
        connection = openstack.connection.Connection(
            auth_type='none',
            accelerator_endpoint_override=endpoint or self.endpoint,
            **options)
        self.addCleanup(connection.close)
        return connection

    # -- curl ----------------------------------------------------------

    def test_plain_http_lists_the_fleet(self):
        devices = self.devices_over_http()
        self.assertEqual(clients.expected_devices(self.host), sorted(
            (d['type'], d['vendor'], d['model'], d['hostname'])
            for d in devices))
        deployables = self.deployables_over_http()
        self.assertEqual(clients.EXPECTED_DEPLOYABLES, sorted(
            (d['name'], d['num_accelerators']) for d in deployables))
        # A card's root, its region, the region's PF and the PF's VFs
        # belong to the same device; three devices.
        device_of = {d['name']: d['device_id'] for d in deployables}
        for bus in ('10', '11'):
            root = 'fpga-0000:%s:00.0' % bus
            self.assertEqual({device_of[root]},
                             {device_of[name] for name in clients.EXPECTED_TREE
                              if name.startswith(root + '-')})
        self.assertEqual(3, len(set(device_of.values())))
        # The regions' parent and root are the card's root; the PFs' and
        # VFs' root too. Only the regions and the whole GPU have providers.
        self.assert_tree(deployables)
        self.assertEqual(
            ['fpga-0000:10:00.0-region0', 'fpga-0000:11:00.0-region0',
             'gpu-0000:12:00.0'],
            sorted(d['name'] for d in deployables if d['rp_uuid']))

    # -- openstacksdk --------------------------------------------------

    def test_sdk_devices_with_every_endpoint_form(self):
        reference = self.devices_over_http()
        for endpoint in ('http://127.0.0.1:%d/', 'http://127.0.0.1:%d',
                         'http://127.0.0.1:%d/v2'):
            connection = self.sdk(endpoint % self.api_port)
            devices = [device.to_dict(computed=False)
                       for device in connection.accelerator.devices()]
            self.assert_rows_match(reference, devices, clients.DEVICE_FIELDS)
            # openstacksdk's id is the uuid (its alternate id).
            self.assertEqual([d['uuid'] for d in devices],
                             [d['id'] for d in devices])

    def test_sdk_get_device_at_2_3_has_status(self):
        reference = self.devices_over_http(version='2.3')
        accelerator = self.sdk(microversion='2.3').accelerator
        for expected in reference:
            device = accelerator.get_device(expected['uuid'])
            self.assert_rows_match([expected], [device.to_dict()],
                                   clients.DEVICE_FIELDS + ('status',))
            self.assertEqual('enabled', device.status)

    def test_sdk_pages_with_a_limit(self):
        accelerator = self.sdk().accelerator
        self.assertEqual(
            sorted(device['uuid'] for device in self.devices_over_http()),
            sorted(device.uuid for device in accelerator.devices(limit=1)))
        self.assertEqual(
            [name for name, _ in clients.EXPECTED_DEPLOYABLES],
            sorted(d.name for d in accelerator.deployables(limit=2)))

    def test_sdk_deployables_and_get_deployable(self):
        reference = self.deployables_over_http()
        accelerator = self.sdk().accelerator
        deployables = [with_uuid(deployable)
                       for deployable in accelerator.deployables()]
        self.assert_rows_match(reference, deployables,
                               clients.DEPLOYABLE_FIELDS)
        self.assertEqual(clients.EXPECTED_DEPLOYABLES, sorted(
            (d['name'], d['num_accelerators']) for d in deployables))
        one = accelerator.get_deployable(reference[0]['uuid'])
        self.assert_rows_match(reference[:1], [with_uuid(one)],
                               clients.DEPLOYABLE_FIELDS)

    def test_sdk_at_2_4_reads_deployables_by_uuid_and_the_tree_walks(self):
        # 2.4 adds a deployable's own integer id to its body: openstacksdk
        # must still take the uuid as its id.
        reference = self.http_list('deployables', version='2.4')
        accelerator = self.sdk(microversion='2.4').accelerator
        deployables = [with_uuid(deployable)
                       for deployable in accelerator.deployables()]
        self.assert_rows_match(reference, deployables,
                               clients.DEPLOYABLE_FIELDS)
        one = accelerator.get_deployable(reference[-1]['uuid'])
        self.assertEqual(reference[-1]['uuid'], one.id)
        # The ids are the database's, and parent_uuid/root_uuid name the
        # rows parent_id/root_id do.
        self.assertEqual(self.deployable_ids(),
                         {row['uuid']: row['id'] for row in reference})
        by_uuid = {row['uuid']: row for row in reference}
        for row in reference:
            for link in ('parent', 'root'):
                linked = row['%s_uuid' % link]
                self.assertEqual(row['%s_id' % link],
                                 linked and by_uuid[linked]['id'])
        self.assert_tree(reference)

    # -- Device profiles -----------------------------------------------

    def test_sdk_device_profile_create_list_get_delete(self):
        name = clients.unique_name('sdk')
        accelerator = self.sdk().accelerator
        created = accelerator.create_device_profile(
            name=name, groups=clients.FPGA_GROUPS,
            description='one FPGA region')
        self.addCleanup(clients.http_call, 'DELETE', self.api_port,
                        '/v2/device_profiles/%s' % name)
        self.assertEqual((name, clients.FPGA_GROUPS, 'one FPGA region'),
                         (created.name, created.groups, created.description))
        self.create_profile_over_http(clients.unique_name('page'))
        self.create_profile_over_http(clients.unique_name('page'))
        reference = self.http_list('device_profiles')
        self.assert_rows_match(reference, [with_uuid(created)],
                               clients.PROFILE_FIELDS, every=False)
        self.assert_rows_match(reference, [
            with_uuid(profile) for profile in accelerator.device_profiles()],
            clients.PROFILE_FIELDS)
        by_uuid = accelerator.get_device_profile(created.uuid)
        by_name = self.sdk(microversion='2.2').accelerator.get_device_profile(
            name)
        self.assert_rows_match([with_uuid(created)],
                               [with_uuid(by_uuid), with_uuid(by_name)],
                               clients.PROFILE_FIELDS, every=False)
        accelerator.delete_device_profile(created.uuid, ignore_missing=False)
        self.assertRaises(openstack.exceptions.NotFoundException,
                          accelerator.get_device_profile, created.uuid)
        # ignore_missing: a 404 is success.
        accelerator.delete_device_profile(created.uuid)

    # -- ARQs: what Nova does, through each client ----------------------

    def test_sdk_arq_create_bind_unbind_delete(self):
        name = clients.unique_name('sdk')
        accelerator = self.sdk().accelerator
        accelerator.create_device_profile(name=name,
                                          groups=clients.FPGA_GROUPS)
        self.addCleanup(clients.http_call, 'DELETE', self.api_port,
                        '/v2/device_profiles/%s' % name)
        rp = self.region_rp('fpga-0000:10:00.0-region0')
        arq = accelerator.create_accelerator_request(device_profile_name=name)
        self.assertEqual(('Initial', name), (arq.state, arq.device_profile_name))
        instance = str(uuid.uuid4())
        self.addCleanup(self.delete_instance_arqs, instance)

        ops = clients.bind_ops(self.host, instance, rp)
        accelerator.patch_accelerator_request(arq.uuid, ops)
        resolved = self.wait_resolved(instance)
        self.assert_bound(resolved[0], instance, rp)
        got = accelerator.get_accelerator_request(arq.uuid)
        self.assert_rows_match(resolved, [got.to_dict(computed=False)],
                               clients.ARQ_FIELDS)
        self.assertIn(arq.uuid,
                      [row.uuid for row in accelerator.accelerator_requests()])

        # The deprecated name of patch_accelerator_request.
        accelerator.update_accelerator_request(arq.uuid, [
            {'path': path, 'op': 'remove'}
            for path in ('/hostname', '/device_rp_uuid', '/instance_uuid')])
        self.assert_unbound(self.wait_state(arq.uuid, 'Unbound'))

        accelerator.patch_accelerator_request(arq.uuid, ops)
        handle = self.wait_resolved(instance)[0]['attach_handle_uuid']
        accelerator.delete_accelerator_request(arq.uuid, ignore_missing=False)
        self.assertRaises(openstack.exceptions.NotFoundException,
                          accelerator.get_accelerator_request, arq.uuid)
        accelerator.delete_accelerator_request(arq.uuid)
        self.assert_handle_free(rp, handle)


def with_uuid(resource):
    """An openstacksdk resource as a dict that also has ``uuid``.

    openstacksdk's Deployable maps the API's ``uuid`` to ``id`` and has no
    ``uuid`` attribute of its own.
    """
    values = resource.to_dict(computed=False)
    values.setdefault('uuid', values['id'])
    return values
