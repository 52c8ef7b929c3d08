"""A real Nova and cyborg's processes on this machine, for the Nova tests.

``NovaDeployment`` (a fixture) brings up, in this order: Keystone (in the
test process), a served Placement and a Glance that checks tokens, two
RabbitMQ virtual hosts (one for Nova and Neutron, one for cyborg), cyborg's
MariaDB database, Neutron's API server (``cyborg.tests.fixtures.neutron``),
Nova's services (``cyborg.tests.fixtures.nova``), and, once nova-compute
has created its compute node's resource provider, cyborg-conductor,
cyborg-api (behind Keystone, [nova] pointing at nova-api) and cyborg-agent
on nova-compute's host with the fake driver's fleet ``FLEET``: the regions'
providers nest under Nova's compute node. Everything goes at cleanup, in
the reverse order.

The fleet: ``CARDS`` Intel cards with one region each (the same region id,
one attach handle), so a one-region profile has ``CARDS`` places to go;
and a Xilinx card whose empty region programs in 0.2 s, for the bitstream
test. A user of a project of its own boots the servers; the admin makes
the flavors and reads the ARQs.
"""

import os
import re
import uuid

import fixtures
from keystoneauth1 import adapter as ks_adapter

from cyborg import context as cyborg_context
from cyborg import exception
from cyborg import objects
from cyborg.tests.fixtures import database
from cyborg.tests.fixtures import glance as glance_fixture
from cyborg.tests.fixtures import keystone as keystone_fixture
from cyborg.tests.fixtures import messaging
from cyborg.tests.fixtures import neutron as neutron_fixture
from cyborg.tests.fixtures import nova as nova_fixture
from cyborg.tests.fixtures import placement as placement_fixture
from cyborg.tests.fixtures import processes
from cyborg.tests.functional.services import deployment as services

START_TIMEOUT = 90
# The compute API's microversion of the tests: networks "none" (2.37),
# shelve-offload and unshelve to a host (2.91).
COMPUTE_MICROVERSION = '2.91'

CARDS = 3
REGION_ID = '5b1e0c7d9a2f4e6b8c3d1a0f9e8d7c6b'
FUNCTION_ID = 'a1b2c3d4e5f60718293a4b5c6d7e8f90'
PROGRAM_REGION_ID = '0f1e2d3c4b5a49687766554433221100'
FLEET = {'fpgas': [
    {'count': CARDS, 'vendor': '0x8086', 'vendor_name': 'intel',
     'board': 'pac_arria10', 'model': 'PAC Arria 10 GX',
     'product_id': '0x09c4',
     'regions': [{'id': REGION_ID, 'function_id': FUNCTION_ID, 'pfs': 1}]},
    {'vendor': '0x10ee', 'vendor_name': 'xilinx', 'board': 'u250',
     'model': 'Alveo U250', 'product_id': '0x5004',
     'regions': [{'id': PROGRAM_REGION_ID, 'pfs': 1,
                  'program': {'seconds': 0.2, 'result': 'success'}}]},
]}
REGIONS = CARDS + 1


def region_trait(region_id):
    return 'CUSTOM_FPGA_REGION_' + region_id.upper()


class NovaDeployment(fixtures.Fixture):
    """Nova, Neutron, Keystone, Placement, Glance and cyborg's processes.

    After setUp: ``nova`` (the NovaFixture: ``endpoint``,
    ``compute_node_uuid``, ``records()``), ``placement``, ``glance``,
    ``keystone``, ``host``, ``regions`` ({rp_uuid: deployable name} of the
    regions' providers), ``user`` (the Account that boots), ``compute``
    (an Adapter of Nova's API as the user), ``admin_compute``,
    ``accelerator`` (cyborg's API as the admin), ``image_id`` (the image
    servers boot from) and ``services`` (every process).
    """

    # The fake driver's fleet of cyborg's agent, and how many providers of
    # it nest under the compute node.
    fleet = FLEET
    region_count = REGIONS

    def _setUp(self):
        suffix = uuid.uuid4().hex[:8]
        self.host = 'nova-compute-%s' % suffix
        self.keystone = self.useFixture(keystone_fixture.KeystoneFixture())
        # Placement on MariaDB, as deployed: Nova's scheduler claims the
        # servers booted at once together, which SQLite answers with 500s.
        self.placement = self.useFixture(placement_fixture.PlacementFixture(
            serve=True, database_url=self.useFixture(database.Database(
                backend='mysql', schema=None, patch_facade=False)).url))
        self.glance = self.useFixture(glance_fixture.GlanceFixture(
            keystone=self.keystone))
        nova_rabbit = self.useFixture(messaging.RabbitIsolation())
        self.rabbit = self.useFixture(messaging.RabbitIsolation())
        self.database = self.useFixture(database.Database(
            backend='mysql', schema='migrations'))
        self.state_path = self.useFixture(fixtures.TempDir()).path
        self.api_port = processes.free_port()
        self.api_url = 'http://127.0.0.1:%d/v2' % self.api_port
        self.neutron = self.useFixture(neutron_fixture.NeutronFixture(
            self.keystone, nova_rabbit.transport_url))
        self.nova = self.useFixture(nova_fixture.NovaFixture(
            self.keystone, self.placement, self.glance, self.neutron,
            self.api_url, nova_rabbit.transport_url, self.host))
        self.services = [self.neutron.process] + self.nova.services
        self._start_cyborg(suffix)
        self.regions = self.wait_until(self._nested_regions,
                                       'the %d regions nested under the '
                                       'compute node' % self.region_count)
        self.user = self.keystone.make_account(roles=('member', 'reader'))
        self.compute = self._adapter(self.user, self.nova.endpoint,
                                     COMPUTE_MICROVERSION)
        self.admin_compute = self._adapter(self.keystone.admin,
                                           self.nova.endpoint,
                                           COMPUTE_MICROVERSION)
        self.accelerator = self._adapter(self.keystone.admin, self.api_url)
        self.image_id = self.upload_image('cirros-%s' % suffix,
                                          os.urandom(1024))

    def _adapter(self, account, endpoint, microversion=None):
        headers = {}
        if microversion:
            headers['OpenStack-API-Version'] = 'compute %s' % microversion
        return ks_adapter.Adapter(
            self.keystone.session(account), endpoint_override=endpoint,
            raise_exc=False, additional_headers=headers)

    def _start_cyborg(self, suffix):
        cyborg = self.keystone.service_account('cyborg')
        common = {
            'transport_url': self.rabbit.transport_url,
            'control_exchange': self.rabbit.control_exchange,
            'report_interval': 2,
            'graceful_shutdown_timeout': 8,
            'debug': True,
            'state_path': self.state_path,
        }
        nova_events = dict(self.keystone.password_options(cyborg),
                           endpoint_override=self.nova.endpoint)
        glance = dict(self.keystone.password_options(cyborg),
                      endpoint_override=self.glance.endpoint)
        conductor_host = 'conductor-%s' % suffix
        conductor = {
            'DEFAULT': dict(common, host=conductor_host),
            'database': {'connection': self.database.url},
            'placement': {'auth_type': 'admin_token',
                          'endpoint': self.placement.endpoint,
                          'token': placement_fixture.TOKEN},
            'nova': nova_events,
            'glance': glance,
            'conductor': {'program_timeout': 30},
        }
        api = {
            'DEFAULT': dict(common, host='api-%s' % suffix,
                            auth_strategy='keystone'),
            'api': {'host_ip': '127.0.0.1', 'port': self.api_port,
                    'api_workers': 2},
            'database': {'connection': self.database.url},
            'keystone_authtoken': self.keystone.authtoken_options(cyborg),
            'nova': nova_events,
            'glance': glance,
        }
        fleet_path = os.path.join(self.state_path, 'fleet.yaml')
        services.write_fleet(fleet_path, self.fleet)
        agent = {
            'DEFAULT': dict(common, host=self.host),
            'agent': {'enabled_drivers': 'fake_driver',
                      'fake_inventory': fleet_path,
                      'report_interval': 2},
            'glance': glance,
        }
        self.conductor = self._cyborg_service('cyborg-conductor', conductor)
        self.api = self._cyborg_service('cyborg-api', api)
        context = cyborg_context.get_admin_context()
        self.wait_until(lambda: _heartbeat(context, conductor_host),
                        'the conductor heartbeat')
        self.agent = self._cyborg_service('cyborg-agent', agent)
        report = re.compile(r'Reported [1-9]\d* device\(s\) of %s(\s|$)'
                            % re.escape(self.host))
        self.wait_until(lambda: report.search(self.agent.log()),
                        'the first inventory report')

    def _cyborg_service(self, script, options):
        service = self.useFixture(processes.ServiceProcess(script, options))
        self.services.append(service)
        return service

    def wait_until(self, probe, what, timeout=START_TIMEOUT, interval=0.2):
        """``probe()``'s first true value; fails with the logs' tails."""
        return processes.wait_until(probe, what, self.services, timeout,
                                    interval)

    def logs(self):
        return processes.log_tails(self.services)

    def _nested_regions(self):
        """{rp_uuid: name} of the regions' providers, once all are children
        of the compute node."""
        response = self.placement.adapter.get(
            '/resource_providers',
            params={'in_tree': self.nova.compute_node_uuid})
        if response.status_code != 200:
            return None
        regions = {provider['uuid']: provider['name']
                   for provider in response.json()['resource_providers']
                   if provider['parent_provider_uuid']
                   == self.nova.compute_node_uuid
                   and self._is_region(provider['name'])}
        return regions if len(regions) == self.region_count else None

    @staticmethod
    def _is_region(provider_name):
        return '-region' in provider_name

    def upload_image(self, name, data, properties=None, tags=()):
        """A public raw image of ``data`` in Glance (as the admin); its id."""
        images = ks_adapter.Adapter(
            self.keystone.session(self.keystone.admin),
            endpoint_override=self.glance.endpoint, raise_exc=True)
        body = {'name': name, 'disk_format': 'raw',
                'container_format': 'bare', 'visibility': 'public',
                'tags': list(tags)}
        body.update(properties or {})
        image = images.post('/v2/images', json=body).json()
        images.put('/v2/images/%s/file' % image['id'], data=data,
                   headers={'Content-Type': 'application/octet-stream'})
        return image['id']


def _heartbeat(context, host):
    try:
        return objects.Service.get_by_host_and_binary(context, host,
                                                      'cyborg-conductor')
    except exception.ResourceNotFound:
        return None
