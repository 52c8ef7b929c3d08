"""PATCH /v2/deployables/{uuid}/program with a real Keystone (issue 9).

Image visibility is about who asks: the conductor must look the image up
in Glance with the caller's token, not with cyborg's own credentials. Here
every part that decides it is real: Keystone (``KeystoneFixture``), Glance
validating tokens against it with its own policy defaults
(``GlanceFixture(keystone=...)``) and the API with ``auth_strategy =
keystone``. Cyborg's own Glance credentials are those of a service user
with the admin role, who sees every project's images: a conductor using
them would program what the caller cannot see, and these tests would fail.

The conductor and one agent (the fake driver, one simulated FPGA region)
are reached by local RPC dispatch in this process.
"""

import os
import uuid

import fixtures
from oslo_serialization import jsonutils
import webob

from cyborg import conf
from cyborg import context as cyborg_context
from cyborg import objects
from cyborg import policies
from cyborg import rpc
from cyborg.agent import manager as agent_manager
from cyborg.agent import rpcapi as agent_rpcapi
from cyborg.agent.drivers import fake
from cyborg.api import app
from cyborg.clients import glance as glance_client
from cyborg.conductor import inventory_report
from cyborg.conductor import manager as conductor_manager
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.db.queries import deployables as deployable_queries
from cyborg.policies import deployable as deployable_policies
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.fixtures import glance as glance_fixture
from cyborg.tests.fixtures import keystone as keystone_fixture

HOST = 'compute-keystone'
CONDUCTOR = 'program-keystone-test'
FLEET = """
fpgas:
  - vendor: "0x8086"
    vendor_name: intel
    board: pac_arria10
    model: "PAC Arria 10 GX"
    product_id: "0x09c4"
    regions:
      - vfs_per_pf: 1
        program: {result: success}
"""
REGION = 'fpga-0000:10:00.0-region0'
FUNCTION = 'a1b2c3d4-0000-4000-8000-00000000f00d'
# The columns a refused request must leave alone.
WATCHED = ('bitstream_id', 'updated_at', 'programming_owner',
           'programming_expires_at')
# Members may program here: the default rule (admin) would refuse the
# callers of these tests before Glance is asked.
POLICY = '"%s": "role:member"\n' % deployable_policies.PROGRAM


def program_body(image_id):
    return [{'path': '/program', 'op': 'replace',
             'value': [{'image_uuid': image_id}]}]


class ProgramWithKeystoneTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.directory = self.useFixture(fixtures.TempDir()).path
        self.keystone = self.useFixture(keystone_fixture.KeystoneFixture())
        self.useFixture(glance_fixture.GlanceFixture(keystone=self.keystone))
        self.useFixture(database.Database(backend='sqlite',
                                          schema='migrations'))
        self._use_policy(POLICY)
        self.flags(auth_strategy='keystone')
        self._start_conductor()
        self.driver = self._start_agent()
        self.region = objects.Deployable.list(
            cyborg_context.get_admin_context(),
            filters={'name': REGION})[0]
        self.application = app.setup_app()
        # Members of two projects, A (the owner's) and B (the other's).
        self.owner = self.keystone.make_account(roles=('member',))
        self.other = self.keystone.make_account(roles=('member',))

    def _use_policy(self, rules):
        policy_file = os.path.join(self.directory, 'policy.yaml')
        with open(policy_file, 'w') as rules_file:
            rules_file.write(rules)
        policies.init(conf.CONF)  # registers the [oslo_policy] options
        self.flags(policy_file=policy_file, group='oslo_policy')
        policies.reset()
        self.addCleanup(policies.reset)

    def _start_conductor(self):
        conductor = conductor_manager.ConductorManager(host=CONDUCTOR)
        rpc.register_local_endpoint(conductor_rpcapi.TOPIC, CONDUCTOR,
                                    conductor)
        self.addCleanup(rpc.unregister_local_endpoint,
                        conductor_rpcapi.TOPIC, CONDUCTOR)

    def _start_agent(self):
        path = os.path.join(self.directory, 'fleet.yaml')
        with open(path, 'w') as stream:
            stream.write(FLEET)
        agent = agent_manager.AgentManager(host=HOST, driver_names=[])
        driver = fake.FakeDriver(path, host=HOST)
        agent.drivers = {'fake_driver': driver}
        rpc.register_local_endpoint(agent_rpcapi.TOPIC, HOST, agent)
        self.addCleanup(rpc.unregister_local_endpoint, agent_rpcapi.TOPIC,
                        HOST)
        inventory_report.apply(cyborg_context.get_admin_context(), HOST,
                               agent.collect_inventory())
        return driver

    def _glance_as(self, account):
        """Cyborg's Glance client sending ``account``'s token."""
        context = cyborg_context.RequestContext(
            auth_token=self.keystone.token(account))
        return glance_client.GlanceClient(conf.CONF, context=context)

    def _image(self, account, visibility):
        """A bitstream image for the region, created by ``account``."""
        region_id = [value for item in self.region.attributes_list
                     for key, value in item.items() if key == 'region_id'][0]
        properties = {
            'visibility': visibility,
            'bs-name': 'aes', 'bs-uuid': str(uuid.uuid4()),
            'vendor': '0x8086', 'board': 'pac_arria10', 'version': '1',
            'driver_ver': '1', 'driver_path': '/opt/intel',
            'function_uuid': FUNCTION, 'region_uuid': region_id}
        path = os.path.join(self.directory, 'bitstream.gbs')
        with open(path, 'wb') as data:
            data.write(b'\x01bitstream' * 100)
        image = self._glance_as(account).upload(path, 'aes', properties,
                                                tags=('FPGA',))
        self.assertEqual(visibility, image['visibility'])
        return image['id']

    def _patch(self, token, image_id, status):
        headers = {'Accept': 'application/json'}
        if token is not None:
            headers['X-Auth-Token'] = token
        request = webob.Request.blank(
            '/v2/deployables/%s/program' % self.region.uuid, method='PATCH',
            headers=headers)
        request.content_type = 'application/json'
        request.body = jsonutils.dump_as_bytes(program_body(image_id))
        response = request.get_response(self.application)
        self.assertEqual(status, response.status_int, response.text)
        return response

    def _row(self):
        row, _ = deployable_queries.get_by_uuid(
            cyborg_context.get_admin_context(), self.region.uuid)
        return {name: getattr(row, name) for name in WATCHED}

    def _assert_programmed(self, response, image_id):
        self.assertEqual(image_id, response.json_body['bitstream_id'])
        self.assertEqual(image_id, self._row()['bitstream_id'])
        self.assertEqual([(REGION, image_id)], self.driver.programs)

    def test_private_image_of_another_project_is_400(self):
        image_id = self._image(self.owner, 'private')
        # Cyborg's own credentials see it: only the caller's token hides it.
        glance_client.GlanceClient(conf.CONF).get_image(image_id)
        before = self._row()

        response = self._patch(self.keystone.token(self.other), image_id, 400)

        self.assertIn('Image %s cannot be used' % image_id,
                      response.json_body['error_message'])
        self.assertIn('not visible to the caller',
                      response.json_body['error_message'])
        self.assertEqual(before, self._row())
        self.assertEqual([], self.driver.programs)

    def test_private_image_programs_for_its_project(self):
        image_id = self._image(self.owner, 'private')

        response = self._patch(self.keystone.token(self.owner), image_id, 200)

        self._assert_programmed(response, image_id)

    def test_public_image_programs_for_another_project(self):
        # Publishing an image takes Glance's admin role.
        image_id = self._image(self.keystone.admin, 'public')

        response = self._patch(self.keystone.token(self.other), image_id, 200)

        self._assert_programmed(response, image_id)

    def test_reader_of_the_owning_project_is_refused_by_policy(self):
        image_id = self._image(self.owner, 'private')
        reader = self.keystone.make_account(
            roles=('reader',), project_id=self.owner.project_id)
        before = self._row()

        response = self._patch(self.keystone.token(reader), image_id, 403)

        self.assertIn(deployable_policies.PROGRAM,
                      response.json_body['error_message'])
        self.assertEqual(before, self._row())
        self.assertEqual([], self.driver.programs)

    def test_missing_made_up_and_revoked_tokens_are_401(self):
        image_id = self._image(self.owner, 'private')
        revoked = self.keystone.token(self.owner)
        self.keystone.revoke(revoked)
        before = self._row()

        for token in (None, uuid.uuid4().hex, revoked):
            with self.subTest(token=token):
                response = self._patch(token, image_id, 401)
                self.assertIn('requires authentication', response.text)
                self.assertEqual(
                    'Keystone uri="%s"' % self.keystone.auth_url,
                    response.headers['WWW-Authenticate'])
        self.assertEqual(before, self._row())
        self.assertEqual([], self.driver.programs)
