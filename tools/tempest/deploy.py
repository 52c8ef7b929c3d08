"""The deployment upstream's API tests run against, on this machine.

A real Keystone (the ``keystone`` package, served from this process by
``cyborg.tests.fixtures.keystone``) with the ``accelerator`` service and
its endpoint in the catalog, a real Placement served over HTTP, a fresh
MariaDB database (dropped at the end), a RabbitMQ virtual host of its own,
and cyborg-conductor, cyborg-api (keystonemiddleware against that Keystone)
and cyborg-agent (the fake driver with the all-in-one's fleet) as separate
processes. ``Deployment`` is a fixture: everything goes at cleanup, in the
reverse order.
"""

import http.client
import os
import re

import fixtures
from keystoneauth1 import adapter as ks_adapter

from cyborg import context as cyborg_context
from cyborg import exception
from cyborg import objects
from cyborg.tests.fixtures import database
from cyborg.tests.fixtures import keystone
from cyborg.tests.fixtures import messaging
from cyborg.tests.fixtures import placement
from cyborg.tests.fixtures import processes

FLEET = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..',
                     'cyborg', 'aio', 'fleet.yaml')
HOST = 'tempest-compute'
CONDUCTOR_HOST = 'tempest-conductor'
SERVICE_TYPE = 'accelerator'
START_TIMEOUT = 60


class Deployment(fixtures.Fixture):
    """Keystone, Placement, MariaDB, RabbitMQ; cyborg started by ``start``.

    After setUp: ``keystone`` (the KeystoneFixture: ``auth_url``,
    ``admin``) and ``api_url`` (the catalog's accelerator endpoint).
    ``start(enforce_new_defaults)`` starts conductor, API and agent and
    returns once the agent's devices are recorded; ``stop()`` stops them
    and keeps their logs in ``logs`` ({name: text}).
    """

    def __init__(self, backend='mysql'):
        super().__init__()
        self.backend = backend
        self.logs = {}
        self._cyborg = None
        self._services = []

    def _setUp(self):
        self.keystone = self.useFixture(keystone.KeystoneFixture())
        self.database = self.useFixture(
            database.Database(backend=self.backend, schema='migrations'))
        self.rabbit = self.useFixture(messaging.RabbitIsolation())
        self.placement = self.useFixture(placement.PlacementFixture(
            serve=True))
        self.state_path = self.useFixture(fixtures.TempDir()).path
        self.api_port = processes.free_port()
        self.api_url = 'http://127.0.0.1:%d/v2' % self.api_port
        self._register_endpoint()
        self.addCleanup(self.stop)

    def _register_endpoint(self):
        """The accelerator service and its endpoints, as devstack adds them."""
        identity = ks_adapter.Adapter(
            self.keystone.session(self.keystone.admin),
            endpoint_override=self.keystone.auth_url)
        service = identity.post('/services', json={'service': {
            'type': SERVICE_TYPE, 'name': 'cyborg',
            'description': 'Accelerator service'}}).json()['service']
        for interface in ('public', 'internal', 'admin'):
            identity.post('/endpoints', json={'endpoint': {
                'service_id': service['id'], 'interface': interface,
                'region_id': keystone.REGION, 'url': self.api_url}})

    def _configs(self, enforce_new_defaults):
        common = {
            'transport_url': self.rabbit.transport_url,
            'control_exchange': self.rabbit.control_exchange,
            'report_interval': 2,
            'graceful_shutdown_timeout': 8,
            'debug': True,
            'state_path': self.state_path,
        }
        policy = {'enforce_new_defaults': enforce_new_defaults}
        conductor = {
            'DEFAULT': dict(common, host=CONDUCTOR_HOST),
            'database': {'connection': self.database.url},
            'placement': {'auth_type': 'admin_token',
                          'endpoint': self.placement.endpoint,
                          'token': placement.TOKEN},
            'oslo_policy': policy,
        }
        api = {
            'DEFAULT': dict(common, host='tempest-api',
                            auth_strategy='keystone'),
            'api': {'host_ip': '127.0.0.1', 'port': self.api_port,
                    'api_workers': 8},
            'database': {'connection': self.database.url},
            'keystone_authtoken': self.keystone.authtoken_options(
                self.keystone.service_account('cyborg')),
            'oslo_policy': policy,
        }
        agent = {
            'DEFAULT': dict(common, host=HOST),
            'agent': {'enabled_drivers': 'fake_driver',
                      'fake_inventory': os.path.abspath(FLEET),
                      'report_interval': 2},
        }
        return conductor, api, agent

    def start(self, enforce_new_defaults):
        """Start conductor, API and agent with that [oslo_policy] choice."""
        self.stop()
        conductor_config, api_config, agent_config = self._configs(
            enforce_new_defaults)
        self._cyborg = fixtures.Fixture()
        self._cyborg.setUp()
        services = []
        try:
            conductor = self._cyborg.useFixture(processes.ServiceProcess(
                'cyborg-conductor', conductor_config))
            api = self._cyborg.useFixture(processes.ServiceProcess(
                'cyborg-api', api_config))
            services = [conductor, api]
            processes.wait_until(lambda: self._heartbeat(CONDUCTOR_HOST),
                                 'the conductor heartbeat', services,
                                 START_TIMEOUT)
            agent = self._cyborg.useFixture(processes.ServiceProcess(
                'cyborg-agent', agent_config))
            services.append(agent)
            report = re.compile(r'Reported [1-9]\d* device\(s\) of %s(\s|$)'
                                % HOST)
            processes.wait_until(lambda: report.search(agent.log()),
                                 'the first inventory report', services,
                                 START_TIMEOUT)
            processes.wait_until(self._api_answers, 'cyborg-api on %s'
                                 % self.api_url, services, START_TIMEOUT)
        finally:
            self._services = services
        return services

    def stop(self):
        """Stop the cyborg services (if running); keep their logs."""
        if self._cyborg is None:
            return
        services, self._services = self._services, []
        try:
            self._cyborg.cleanUp()
        finally:
            self._cyborg = None
            for service in services:
                self.logs.setdefault(service.script, []).append(service.log())

    def _heartbeat(self, host):
        try:
            return objects.Service.get_by_host_and_binary(
                cyborg_context.get_admin_context(), host, 'cyborg-conductor')
        except exception.ResourceNotFound:
            return None

    def _api_answers(self):
        # /v2 is one of the paths answered without a token.
        connection = http.client.HTTPConnection('127.0.0.1', self.api_port,
                                                timeout=5)
        try:
            connection.request('GET', '/v2')
            return connection.getresponse().status == 200
        except OSError:
            return False
        finally:
            connection.close()
