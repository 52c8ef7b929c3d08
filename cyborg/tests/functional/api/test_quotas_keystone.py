"""Quotas from a real Keystone's unified limits (issue 16).

Keystone (``KeystoneFixture``) holds the limits: an accelerator service
and endpoint of each test's own, with the registered limits ``class:FPGA``
= 1 and ``device_profiles`` = 2, and project limits where a test sets
them. Cyborg reads them with oslo.limit (``[quota] driver =
unified_limits``), as the service user ``cyborg`` with a system-scoped
token (a project-scoped one would see the limits of its own project
only). The API validates the callers' tokens against the same Keystone;
the conductor is reached by local RPC dispatch in this process.
"""

import uuid

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1.identity import v3 as ks_v3
from oslo_limit import limit
from oslo_serialization import jsonutils
import webob

from cyborg import conf
from cyborg import policies
from cyborg import rpc
from cyborg.api import app
from cyborg.conductor import manager as conductor_manager
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.fixtures import keystone as keystone_fixture

CONDUCTOR = 'quotas-keystone-test'
LIMIT_GROUP = 'oslo_limit'


class QuotasWithKeystoneTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.keystone = self.useFixture(keystone_fixture.KeystoneFixture())
        self.useFixture(database.Database(backend='sqlite',
                                          schema='migrations'))
        policies.init(conf.CONF)
        self.addCleanup(policies.reset)
        self.flags(auth_strategy='keystone')
        self.system = self._system_admin()
        self.endpoint_id = self._accelerator_endpoint()
        self._register_limit('class:FPGA', 1)
        self._register_limit('device_profiles', 2)
        self._configure_limits()
        self._start_conductor()
        self.application = app.setup_app()
        self.admin = self.keystone.admin
        self.member = self.keystone.make_account(roles=('member',))

    def _system_admin(self):
        """Keystone's API as the admin with a system-scoped token: limits
        are created and read system-wide."""
        admin = self.keystone.admin
        auth = ks_v3.Password(
            auth_url=self.keystone.auth_url, username=admin.username,
            password=admin.password, user_domain_id='default',
            system_scope='all')
        return ks_adapter.Adapter(ks_session.Session(auth=auth),
                                  endpoint_override=self.keystone.auth_url)

    def _post(self, path, key, values):
        response = self.system.post(path, json={key: values})
        return response.json()[key]

    def _accelerator_endpoint(self):
        """A service and public endpoint of this test's own: its limits."""
        service = self._post('/services', 'service', {
            'type': 'accelerator', 'name': 'cyborg-%s' % uuid.uuid4().hex})
        self.service_id = service['id']
        endpoint = self._post('/endpoints', 'endpoint', {
            'service_id': self.service_id, 'interface': 'public',
            'region_id': keystone_fixture.REGION,
            'url': 'http://127.0.0.1:6666/v2'})
        return endpoint['id']

    def _register_limit(self, resource, default_limit):
        self._post('/registered_limits', 'registered_limits', [{
            'service_id': self.service_id,
            'region_id': keystone_fixture.REGION,
            'resource_name': resource, 'default_limit': default_limit}])

    def _project_limit(self, project_id, resource, resource_limit):
        self._post('/limits', 'limits', [{
            'service_id': self.service_id,
            'region_id': keystone_fixture.REGION, 'project_id': project_id,
            'resource_name': resource, 'resource_limit': resource_limit}])

    def _configure_limits(self):
        """[quota] and [oslo_limit] as a deployment sets them."""
        service_user = self.keystone.service_account('cyborg')
        reader = self.system.get('/roles', params={'name': 'reader'}) \
            .json()['roles'][0]['id']
        self.system.put('/system/users/%s/roles/%s'
                        % (service_user.user_id, reader))
        self.keystone.register_auth_opts(LIMIT_GROUP)
        options = self.keystone.password_options(service_user)
        del options['project_name'], options['project_domain_id']
        options.update(system_scope='all', endpoint_id=self.endpoint_id)
        for name, value in options.items():
            self.flags(group=LIMIT_GROUP, **{name: value})
        self.flags(driver='unified_limits', group='quota')
        # oslo.limit keeps one Keystone connection per process.
        limit._SDK_CONNECTION = None
        self.addCleanup(setattr, limit, '_SDK_CONNECTION', None)

    def _start_conductor(self):
        conductor = conductor_manager.ConductorManager(host=CONDUCTOR)
        rpc.register_local_endpoint(conductor_rpcapi.TOPIC, CONDUCTOR,
                                    conductor)
        self.addCleanup(rpc.unregister_local_endpoint,
                        conductor_rpcapi.TOPIC, CONDUCTOR)

    def _request(self, account, path, body, status):
        request = webob.Request.blank(path, method='POST', headers={
            'Accept': 'application/json',
            'X-Auth-Token': self.keystone.token(account)})
        request.content_type = 'application/json'
        request.body = jsonutils.dump_as_bytes(body)
        response = request.get_response(self.application)
        self.assertEqual(status, response.status_int, response.text)
        return response

    def _fault(self, response):
        """The message of an error body (Cyborg's JSON-in-JSON)."""
        return jsonutils.loads(
            response.json_body['error_message'])['faultstring']

    def _create_profile(self, name, status=201):
        return self._request(
            self.admin, '/v2/device_profiles',
            [{'name': name, 'groups': [{'resources:FPGA': '1'}]}], status)

    def _create_arq(self, account, status=201):
        return self._request(account, '/v2/accelerator_requests',
                             {'device_profile_name': 'fpga'}, status)

    def test_device_profiles_stop_at_the_registered_limit(self):
        self._create_profile('fpga')
        self._create_profile('second')

        response = self._create_profile('third', 403)

        self.assertEqual('Quota exceeded for device_profiles: requested 1, '
                         'used 2, limit 2',
                         self._fault(response))

    def test_arqs_stop_at_the_registered_limit(self):
        self._create_profile('fpga')
        created = self._create_arq(self.member)
        self.assertEqual(1, len(created.json_body['arqs']))

        response = self._create_arq(self.member, 403)

        self.assertEqual('Quota exceeded for class:FPGA: requested 1, used 1, '
                         'limit 1', self._fault(response))
        # Another project has its own usage.
        self._create_arq(self.keystone.make_account(roles=('member',)))

    def test_a_project_limit_overrides_the_registered_limit(self):
        self._create_profile('fpga')
        self._project_limit(self.member.project_id, 'class:FPGA', 3)

        for _ in range(3):
            self._create_arq(self.member)
        response = self._create_arq(self.member, 403)

        self.assertEqual('Quota exceeded for class:FPGA: requested 1, used 3, '
                         'limit 3', self._fault(response))

    def test_a_project_limit_of_zero_refuses_the_first(self):
        self._create_profile('fpga')
        self._project_limit(self.member.project_id, 'class:FPGA', 0)

        response = self._create_arq(self.member, 403)

        self.assertIn('requested 1, used 0, limit 0',
                      self._fault(response))
