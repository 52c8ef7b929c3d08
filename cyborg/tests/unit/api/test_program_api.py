"""PATCH /v2/deployables/{uuid}/program through the real WSGI application.

The conductor and one agent (the fake driver, simulated FPGA regions) are
reached by local RPC dispatch in this process; Glance is a real one
(``cyborg.tests.fixtures.glance``), holding the bitstream images. Every
refusal leaves the deployable's row as it was.
"""

import datetime
import os
import threading
import uuid

import fixtures
from oslo_serialization import jsonutils
from oslo_utils import timeutils
import webob

from cyborg.common import vocabulary
from cyborg import conf
from cyborg import context as cyborg_context
from cyborg import objects
from cyborg import policies
from cyborg import rpc
from cyborg.agent import manager as agent_manager
from cyborg.agent import rpcapi as agent_rpcapi
from cyborg.agent.drivers import fake
from cyborg.clients import glance as glance_client
from cyborg.conductor import inventory_report
from cyborg.db.queries import deployables as deployable_queries
from cyborg.policies import deployable as deployable_policies
from cyborg.tests.fixtures import glance as glance_fixture
from cyborg.tests.unit.api import real_app
from cyborg.tests.unit.db import records

HOST = 'compute-1'
# An Intel card: region0 programs (slowly enough to overlap a second
# request), region1 fails, region2 says the bitstream does not fit.
FLEET = """
fpgas:
  - vendor: "0x8086"
    vendor_name: intel
    board: pac_arria10
    model: "PAC Arria 10 GX"
    product_id: "0x09c4"
    regions:
      - vfs_per_pf: 1
        program: {seconds: 0.5, result: success}
      - vfs_per_pf: 1
        program: {result: failed}
      - vfs_per_pf: 1
        program: {result: invalid_bitstream}
"""
REGION = 'fpga-0000:10:00.0-region%d'
FUNCTION = 'a1b2c3d4-0000-4000-8000-00000000f00d'
# The columns a refused request must leave alone.
WATCHED = ('bitstream_id', 'updated_at', 'programming_owner',
           'programming_expires_at')


def body(image_id, **changes):
    operation = {'path': '/program', 'op': 'replace',
                 'value': [{'image_uuid': image_id}]}
    operation.update(changes)
    return [operation]


class ProgramAPIBase(real_app.RealAppTestCase):
    """The application, a conductor, the agent of FLEET and Glance."""

    conductor_server = 'program-api-test'

    def setUp(self):
        super().setUp()
        self.context = cyborg_context.get_admin_context()
        self.useFixture(glance_fixture.GlanceFixture())
        self.glance = glance_client.GlanceClient(conf.CONF)
        self.directory = self.useFixture(fixtures.TempDir()).path
        self.agent = self._start_agent()
        inventory_report.apply(self.context, HOST,
                               self.agent.collect_inventory())
        self.regions = [objects.Deployable.list(
            self.context, filters={'name': REGION % index})[0]
            for index in range(3)]

    def _start_agent(self):
        path = os.path.join(self.directory, 'fleet.yaml')
        with open(path, 'w') as stream:
            stream.write(FLEET)
        agent = agent_manager.AgentManager(host=HOST, driver_names=[])
        agent.drivers = {'fake_driver': fake.FakeDriver(path, host=HOST)}
        rpc.register_local_endpoint(agent_rpcapi.TOPIC, HOST, agent)
        self.addCleanup(rpc.unregister_local_endpoint, agent_rpcapi.TOPIC,
                        HOST)
        return agent

    def _region_id(self, region):
        return [value for item in region.attributes_list
                for key, value in item.items() if key == 'region_id'][0]

    def _image(self, region=None, tags=('FPGA',), **changes):
        """A bitstream image for ``region`` (default region0) in Glance."""
        properties = {
            'bs-name': 'aes', 'bs-uuid': str(uuid.uuid4()),
            'vendor': '0x8086', 'board': 'pac_arria10', 'version': '1',
            'driver_ver': '1', 'driver_path': '/opt/intel',
            'function_uuid': FUNCTION,
            'region_uuid': self._region_id(region or self.regions[0])}
        properties.update(changes)
        properties = {key: value for key, value in properties.items()
                      if value is not None}
        path = os.path.join(self.directory, 'bitstream.gbs')
        with open(path, 'wb') as data:
            data.write(b'\x01bitstream' * 100)
        return self.glance.upload(path, 'aes', properties, tags)['id']

    def _patch(self, deployable_uuid, data, status, suffix='', version=None):
        """PATCH .../program``suffix``; with ``suffix`` None, the deployable."""
        path = '/v2/deployables/%s' % deployable_uuid
        if suffix is not None:
            path += '/program' + suffix
        headers = {'Accept': 'application/json'}
        if version:
            headers['OpenStack-API-Version'] = 'accelerator ' + version
        request = webob.Request.blank(path, method='PATCH', headers=headers)
        request.content_type = 'application/json'
        request.body = jsonutils.dump_as_bytes(data)
        response = request.get_response(self.application)
        self.assertEqual(status, response.status_int, response.text)
        return response

    def _row(self, region):
        row, _ = deployable_queries.get_by_uuid(self.context, region.uuid)
        return {name: getattr(row, name) for name in WATCHED}

    def _refused(self, region, data, status, text, suffix=''):
        """Assert the request answers ``status`` naming ``text``, no change."""
        before = self._row(region)
        response = self._patch(region.uuid, data, status, suffix)
        self.assertIn(text, response.json_body['error_message'])
        self.assertEqual(before, self._row(region))
        return response


class ProgramAPITest(ProgramAPIBase):

    def test_success_records_the_bitstream(self):
        image_id = self._image()
        region = self.regions[0]

        response = self._patch(region.uuid, body(image_id), 200)

        self.assertEqual(region.uuid, response.json_body['uuid'])
        self.assertEqual(image_id, response.json_body['bitstream_id'])
        row = self._row(region)
        self.assertEqual(image_id, row['bitstream_id'])
        self.assertIsNone(row['programming_owner'])
        self.assertIsNone(row['programming_expires_at'])
        driver = self.agent.drivers['fake_driver']
        self.assertIsNotNone(driver.loaded_bitstream(
            self.agent.deployables.get('fake_driver')[region.name][0]
            .controlpath_id, region.name))

    def test_the_answer_at_2_6_is_the_deployable_as_shown(self):
        image_id = self._image()
        region = self.regions[0]

        answer = self._patch(region.uuid, body(image_id), 200,
                             version='2.6').json_body

        shown = webob.Request.blank(
            '/v2/deployables/%s' % region.uuid, headers={
                'OpenStack-API-Version': 'accelerator 2.6'}).get_response(
            self.application).json_body
        self.assertEqual(shown, answer)
        self.assertEqual(('healthy', None), (answer['health'],
                                             answer['drain']))
        self.assertEqual(image_id, answer['bitstream_id'])

    def test_sdk_url_repeating_the_uuid_is_accepted(self):
        image_id = self._image()
        region = self.regions[0]

        response = self._patch(region.uuid, body(image_id), 200,
                               suffix='/' + region.uuid)

        self.assertEqual(image_id, response.json_body['bitstream_id'])

    def test_sdk_url_with_another_uuid_is_refused(self):
        self._refused(self.regions[0], body(self._image()), 400,
                      'two deployables', suffix='/' + str(uuid.uuid4()))

    def test_malformed_bodies_are_refused(self):
        image_id = self._image()
        cases = [
            ({}, 'list of one operation'),
            (body(image_id) * 2, 'list of one operation'),
            (body(image_id, path='/name'), 'path must be /program'),
            (body(image_id, op='remove'), 'op must be one of'),
            (body(image_id, value={'image_uuid': image_id}),
             'value must be a list of one object'),
            (body(image_id, value=[{}]), 'image_uuid must be a UUID'),
            (body('not-a-uuid'), 'image_uuid must be a UUID'),
            (body(image_id, value=[{'image_uuid': image_id, 'x': 1}]),
             'unknown key(s) x'),
        ]
        for data, text in cases:
            with self.subTest(data=data):
                self._refused(self.regions[0], data, 400, text)

    def test_malformed_and_unknown_deployables(self):
        image_id = self._image()
        response = self._patch('not-a-uuid', body(image_id), 400)
        self.assertIn('Expected a UUID', response.json_body['error_message'])
        response = self._patch(str(uuid.uuid4()), body(image_id), 404)
        self.assertIn('Deployable not found',
                      response.json_body['error_message'])

    def test_policy_refusal_is_403(self):
        policy_file = os.path.join(self.directory, 'policy.yaml')
        with open(policy_file, 'w') as rules_file:
            rules_file.write('"%s": "!"\n' % deployable_policies.PROGRAM)
        self.flags(policy_file=policy_file, group='oslo_policy')
        policies.reset()
        self._refused(self.regions[0], body(self._image()), 403,
                      deployable_policies.PROGRAM)

    def test_unknown_image_is_400(self):
        self._refused(self.regions[0], body(str(uuid.uuid4())), 400,
                      'not visible to the caller')

    def test_image_without_the_fpga_tag_is_400(self):
        self._refused(self.regions[0], body(self._image(tags=())), 400,
                      'is not tagged FPGA')

    def test_image_with_invalid_metadata_is_400(self):
        self._refused(self.regions[0], body(self._image(board=None)), 400,
                      'board is required')

    def test_bitstream_for_another_board_is_409(self):
        self._refused(self.regions[0], body(self._image(board='u250')), 409,
                      'board')

    def test_bitstream_for_another_region_is_409(self):
        image_id = self._image(region=self.regions[1])
        self._refused(self.regions[0], body(image_id), 409, 'region_uuid')

    def test_deployable_held_by_an_arq_is_409(self):
        profile = records.make_device_profile(
            self.context, groups=[{'resources:FPGA': '1'}])
        records.make_arq(self.context, profile, hostname=HOST,
                         deployable_id=self.regions[0].id,
                         state=vocabulary.ARQState.BOUND)
        self._refused(self.regions[0], body(self._image()), 409,
                      'in use by an accelerator request')

    def test_deployable_being_programmed_is_409(self):
        now = timeutils.utcnow()
        deployable_queries.start_programming(
            self.context, self.regions[0].uuid, 'other/1/x', now,
            now + datetime.timedelta(hours=1))
        self._refused(self.regions[0], body(self._image()), 409,
                      'being programmed already')

    def test_lock_that_ran_out_is_taken_over(self):
        since = timeutils.utcnow().replace(year=2020)
        deployable_queries.start_programming(
            self.context, self.regions[0].uuid, 'dead/1/x', since,
            since + datetime.timedelta(hours=1))
        image_id = self._image()

        self._patch(self.regions[0].uuid, body(image_id), 200)

        self.assertEqual(image_id, self._row(self.regions[0])['bitstream_id'])

    def test_concurrent_second_program_is_409(self):
        image_id = self._image()
        region = self.regions[0]
        statuses = []

        def program():
            request = webob.Request.blank(
                '/v2/deployables/%s/program' % region.uuid, method='PATCH',
                headers={'Accept': 'application/json'})
            request.content_type = 'application/json'
            request.body = jsonutils.dump_as_bytes(body(image_id))
            statuses.append(request.get_response(self.application).status_int)

        threads = [threading.Thread(target=program) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)

        self.assertEqual([200, 409], sorted(statuses))
        self.assertEqual(image_id, self._row(region)['bitstream_id'])

    def test_driver_failure_is_502_and_the_region_unknown(self):
        region = self.regions[1]
        image_id = self._image(region=region)
        response = self._patch(region.uuid, body(image_id), 502)
        self.assertIn('simulated FAILED', response.json_body['error_message'])
        # The region may hold part of the image: it holds no known one.
        row = self._row(region)
        self.assertEqual((None, None, None),
                         (row['bitstream_id'], row['programming_owner'],
                          row['programming_expires_at']))
        # The message names the image, not the agent's temporary file.
        message = response.json_body['error_message']
        self.assertIn('image %s' % image_id, message)
        self.assertNotIn('cyborg-program-', message)

    def test_driver_refusing_the_bitstream_is_400(self):
        region = self.regions[2]
        self._refused(region, body(self._image(region=region)), 400,
                      'refused image')

    def test_patch_of_the_deployable_itself_takes_the_bitstream_form(self):
        # PATCH on the deployable is the bitstream patch: the body of
        # .../program is refused there, naming the form it takes
        # (test_program_forms_api tests the form itself).
        self._refused(self.regions[0], body(self._image()), 400,
                      'path must be /bitstream', suffix=None)
