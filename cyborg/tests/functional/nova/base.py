"""The test case of the Nova tests: one deployment for a whole class.

Bringing up Nova, Neutron and cyborg costs about a minute on two cores, so
a class's tests share one ``NovaDeployment``, made by ``setUpClass`` and
torn down by ``tearDownClass``; each test deletes the servers it booted
(and waits until Nova and cyborg let go of them) before the next one runs.
A failing test gets every service's log attached.
"""

import uuid

from oslotest import base
import sqlalchemy as sa
from testtools import content

from cyborg import conf
from cyborg.db import models
from cyborg import objects
from cyborg.tests.fixtures import database
from cyborg.tests.fixtures import messaging
from cyborg.tests.fixtures import nova as nova_fixture
from cyborg.tests.functional.nova import deployment

SERVER_TIMEOUT = 60
ARQ_TIMEOUT = 30


class NovaTestCase(base.BaseTestCase):
    """Helpers to boot servers with accelerators and look at the result."""

    # The fixture of the class's deployment (before ``deployment``, which
    # hides the module's name in the class body).
    deployment_class = deployment.NovaDeployment
    deployment = None

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # What the deployment needs, checked first: a missing one skips the
        # class (fails it under CI=true) instead of failing its setUp.
        nova_fixture.nova_venv()
        database.backend_available('mysql')
        messaging.require_rabbit()
        # The deployment's fixtures point cyborg.conf.CONF at the services
        # they run (and register options there) until tearDownClass: no
        # test resets it (cyborg.tests.base.TestCase would). Waiting for
        # the conductor reads cyborg's objects.
        conf.CONF([], project='cyborg', default_config_files=[])
        objects.register_all()
        fixture = cls.deployment_class()
        # A setUp that fails cleans up what it made.
        fixture.setUp()
        cls.deployment = fixture

    @classmethod
    def tearDownClass(cls):
        if cls.deployment is not None:
            cls.deployment.cleanUp()
            cls.deployment = None
        super().tearDownClass()

    def setUp(self):
        super().setUp()
        self.deployment = type(self).deployment
        self.compute = self.deployment.compute
        self.servers = []
        self.addCleanup(self._delete_servers)
        self.addOnException(self._attach_logs)

    def _attach_logs(self, exc_info):
        for service in self.deployment.services:
            self.addDetail('%s-%s-log' % (service.script, id(service)),
                           content.text_content(service.log()))

    # -- Cyborg ------------------------------------------------------------

    def cyborg(self, method, path, expected=None, **kwargs):
        """A request to cyborg's API as the admin; its decoded body."""
        response = self.deployment.accelerator.request(path, method,
                                                       **kwargs)
        if expected is not None:
            self.assertEqual(expected, response.status_code, response.text)
        return response.json() if response.content else None

    def make_profile(self, groups, prefix='fpga'):
        """A device profile of ``groups``; its name."""
        name = '%s-%s' % (prefix, uuid.uuid4().hex[:8])
        self.cyborg('POST', '/device_profiles', 201,
                    json=[{'name': name, 'groups': groups}])
        return name

    def arqs(self, instance_uuid):
        """The ARQs of ``instance_uuid`` (any state)."""
        return self.cyborg('GET', '/accelerator_requests', 200,
                           params={'instance': instance_uuid})[
            'arqs']

    def all_arqs(self):
        return self.cyborg('GET', '/accelerator_requests', 200)['arqs']

    def deployable_of_region(self, region_id):
        """The deployable of the region with id ``region_id`` (one card)."""
        found = []
        for item in self.cyborg('GET', '/deployables', 200)['deployables']:
            if item['rp_uuid'] not in self.deployment.regions:
                continue
            traits = self.traits(item['rp_uuid'])
            if deployment.region_trait(region_id) in traits:
                found.append(item)
        self.assertEqual(1, len(found), found)
        return self.cyborg('GET', '/deployables/%s' % found[0]['uuid'], 200)

    def handles(self, rp_uuid):
        """{uuid: in use} of the attach handles of provider ``rp_uuid``,
        as cyborg's database holds them."""
        with self.deployment.database.engine.connect() as connection:
            rows = connection.execute(
                sa.select(models.AttachHandle.uuid, models.AttachHandle.in_use)
                .join(models.Deployable,
                      models.Deployable.id == models.AttachHandle.deployable_id)
                .where(models.Deployable.rp_uuid == rp_uuid)).all()
        return {row.uuid: bool(row.in_use) for row in rows}

    def handles_in_use(self, rp_uuid):
        return [handle for handle, in_use in self.handles(rp_uuid).items()
                if in_use]

    # -- Nova --------------------------------------------------------------

    def nova(self, method, path, expected=None, admin=False, **kwargs):
        """A request to Nova's API as the user (or the admin); the response."""
        adapter = self.deployment.admin_compute if admin else self.compute
        response = adapter.request(path, method, **kwargs)
        if expected is not None:
            self.assertEqual(expected, response.status_code, response.text)
        return response

    def make_flavor(self, profile_name, **extra_specs):
        """A flavor (1 vCPU, 64 MB, 1 GB) asking for ``profile_name``."""
        flavor = self.nova('POST', '/flavors', 200, admin=True, json={
            'flavor': {'name': 'accel-%s' % uuid.uuid4().hex[:8],
                       'ram': 64, 'vcpus': 1, 'disk': 1}}).json()['flavor']
        extra_specs['accel:device_profile'] = profile_name
        self.nova('POST', '/flavors/%s/os-extra_specs' % flavor['id'], 200,
                  admin=True, json={'extra_specs': extra_specs})
        return flavor['id']

    def boot(self, flavor_id, name=None):
        """Ask Nova for a server of ``flavor_id`` without networks; its id."""
        server = self.nova('POST', '/servers', 202, json={'server': {
            'name': name or 'server-%s' % uuid.uuid4().hex[:8],
            'imageRef': self.deployment.image_id, 'flavorRef': flavor_id,
            'networks': 'none'}}).json()['server']
        self.servers.append(server['id'])
        return server['id']

    def server(self, server_id):
        return self.nova('GET', '/servers/%s' % server_id, 200,
                         admin=True).json()['server']

    def wait_for_server(self, server_id, status, task_state=None,
                        timeout=SERVER_TIMEOUT):
        """The server once it shows ``status`` with no task under way.

        Fails at once when it turns ERROR (unless that is ``status``)."""
        def probe():
            server = self.server(server_id)
            if server['status'] == 'ERROR' and status != 'ERROR':
                self.fail('server %s is ERROR: %s' % (
                    server_id, server.get('fault')))
            if (server['status'] == status and
                    server.get('OS-EXT-STS:task_state') == task_state):
                return server
            return None
        return self.deployment.wait_until(
            probe, 'server %s %s' % (server_id, status), timeout, 0.5)

    def wait_for_end(self, server_id, timeout=SERVER_TIMEOUT):
        """The server once its boot ended: ACTIVE or ERROR."""
        def probe():
            server = self.server(server_id)
            if server['status'] in ('ACTIVE', 'ERROR') and \
                    server.get('OS-EXT-STS:task_state') is None:
                return server
            return None
        return self.deployment.wait_until(
            probe, 'server %s ACTIVE or ERROR' % server_id, timeout, 0.5)

    def action(self, server_id, body, expected=202, admin=False):
        """A server action, as the user (or the admin: Nova's policy lets
        only admins offload, migrate and live-migrate)."""
        return self.nova('POST', '/servers/%s/action' % server_id, expected,
                         admin=admin, json=body)

    def delete(self, server_id):
        """Delete the server and wait until Nova no longer has it."""
        self.nova('DELETE', '/servers/%s' % server_id, 204)
        self.wait_until_gone(server_id)
        if server_id in self.servers:
            self.servers.remove(server_id)

    def wait_until_gone(self, server_id):
        self.deployment.wait_until(
            lambda: self.nova('GET', '/servers/%s' % server_id,
                              admin=True).status_code == 404,
            'server %s gone' % server_id, SERVER_TIMEOUT, 0.5)

    def _delete_servers(self):
        """Delete what the test left; the next test finds nothing held."""
        for server_id in self.servers:
            self.nova('DELETE', '/servers/%s' % server_id)
        for server_id in self.servers:
            self.wait_until_gone(server_id)
            self.wait_until_released(server_id)
        self.servers = []

    def wait_until_released(self, server_id):
        """Wait until cyborg holds no ARQ and Placement no allocation of
        the server."""
        self.deployment.wait_until(
            lambda: not self.arqs(server_id) and
            not self.allocations(server_id),
            'the ARQs and allocations of server %s released' % server_id,
            ARQ_TIMEOUT, 0.5)

    # -- Placement ---------------------------------------------------------

    def allocations(self, consumer_uuid):
        """{rp_uuid: {resource class: amount}} of the consumer."""
        response = self.deployment.placement.adapter.get(
            '/allocations/%s' % consumer_uuid)
        self.assertEqual(200, response.status_code, response.text)
        return {rp: allocation['resources'] for rp, allocation in
                response.json()['allocations'].items()}

    def traits(self, rp_uuid):
        response = self.deployment.placement.adapter.get(
            '/resource_providers/%s/traits' % rp_uuid)
        self.assertEqual(200, response.status_code, response.text)
        return set(response.json()['traits'])

    def region_allocated(self, server_id):
        """The one region provider Placement allocated to the server."""
        regions = [rp for rp in self.allocations(server_id)
                   if rp in self.deployment.regions]
        self.assertEqual(1, len(regions), self.allocations(server_id))
        return regions[0]

    # -- Assertions --------------------------------------------------------

    def assert_bound(self, server_id, rp_uuid=None):
        """The server has one ARQ, Bound to it on the region Placement
        allocated (``rp_uuid`` if given); the ARQ."""
        allocated = self.region_allocated(server_id)
        if rp_uuid is not None:
            self.assertEqual(rp_uuid, allocated)
        arqs = self.arqs(server_id)
        self.assertEqual(1, len(arqs), arqs)
        arq = arqs[0]
        self.assertEqual(
            ('Bound', server_id, allocated, self.deployment.host),
            (arq['state'], arq['instance_uuid'], arq['device_rp_uuid'],
             arq['hostname']), arq)
        # The one handle of the region, held by this ARQ alone.
        self.assertEqual([arq['attach_handle_uuid']],
                         self.handles_in_use(allocated), arq)
        return arq

    def driver_calls(self, server_id):
        """The fake driver's calls for the server: [(call, [ARQ uuid])]."""
        return [(record['call'],
                 [arq['uuid'] for arq in record['accel_info']])
                for record in self.deployment.nova.records()
                if record['instance'] == server_id]

    def last_accel_info(self, server_id):
        records = [record for record in self.deployment.nova.records()
                   if record['instance'] == server_id]
        self.assertTrue(records, 'the driver was never called for %s'
                        % server_id)
        return records[-1]['accel_info']

