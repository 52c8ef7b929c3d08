"""The two forms of the programming call, and what cannot be programmed.

``PATCH /v2/deployables/{uuid}`` with a patch of ``/bitstream`` is the
same call as ``PATCH /v2/deployables/{uuid}/program``: the same policy,
checks and answers. A deployable of any device but an FPGA is refused
with a 400 naming it and its device type, before Glance or an agent is
asked. On SQLite, MariaDB and PostgreSQL, with the application, a
conductor and an agent of ``test_program_api``'s fleet.
"""

import os
import uuid

import webob
from oslo_serialization import jsonutils

from cyborg.common import vocabulary
from cyborg import policies
from cyborg.api import app
from cyborg.policies import deployable as deployable_policies
from cyborg.tests.unit.api import test_program_api
from cyborg.tests.unit.db import records

HOST = test_program_api.HOST
program_body = test_program_api.body
# Suffix None: PATCH the deployable itself (see ProgramAPIBase._patch).
ITSELF = None


def bitstream_body(image_id, **changes):
    operation = {'path': '/bitstream', 'op': 'add', 'value': image_id}
    operation.update(changes)
    return [operation]


class RecordingAgent:
    """Counts the agent's program calls (none may reach it when refused)."""

    def __init__(self, agent):
        self.calls = 0
        self._program = agent.program
        agent.program = self

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self._program(*args, **kwargs)


class ProgramFormsTest(test_program_api.ProgramAPIBase):

    def test_bitstream_patch_programs_and_answers_as_program_does(self):
        region = self.regions[0]
        for op in ('add', 'replace'):
            with self.subTest(op=op):
                image_id = self._image()

                response = self._patch(region.uuid,
                                       bitstream_body(image_id, op=op), 200,
                                       suffix=ITSELF)

                self.assertEqual(image_id, self._row(region)['bitstream_id'])
                self.assertEqual((region.uuid, image_id), (
                    response.json_body['uuid'],
                    response.json_body['bitstream_id']))
        # The same answer as .../program gives for the same call.
        image_id = self._image()
        by_program = self._patch(region.uuid, program_body(image_id),
                                 200).json_body
        by_patch = self._patch(region.uuid, bitstream_body(image_id), 200,
                               suffix=ITSELF).json_body
        for answer in (by_program, by_patch):
            answer.pop('updated_at')
        self.assertEqual(by_program, by_patch)

    def _at(self, method, path, version, data=None):
        request = webob.Request.blank(path, method=method, headers={
            'Accept': 'application/json',
            'OpenStack-API-Version': 'accelerator %s' % version})
        if data is not None:
            request.content_type = 'application/json'
            request.body = jsonutils.dump_as_bytes(data)
        response = request.get_response(self.application)
        self.assertEqual(200, response.status_int, response.text)
        return response.json_body

    def test_the_answer_is_the_deployable_as_its_get_shows_it(self):
        # The conductor's answer carries what each microversion shows (from
        # 2.4 the tree's uuids and nested attributes): the same as GET of
        # the deployable, and so under a pin below RPC 1.5.
        region = self.regions[0]
        board = records.make_attribute(self.context, region, key='board',
                                       value=None)
        records.make_attribute(self.context, region, key='shell',
                               value='pac', parent_attribute_id=board.id)
        for pin in (None, '1.4'):
            self.flags(conductor=pin, group='upgrade_levels')
            self.application = app.setup_app()
            for version in ('2.0', '2.3', '2.4'):
                with self.subTest(pin=pin, version=version):
                    path = '/v2/deployables/%s' % region.uuid
                    answer = self._at('PATCH', path + '/program', version,
                                      program_body(self._image()))
                    self.assertEqual(self._at('GET', path, version), answer)
                    self.assertEqual('2.4' == version,
                                     '{"board": {"shell": "pac"}}' in answer[
                                         'attributes_list'])

    def test_malformed_bitstream_patches_are_refused(self):
        image_id = self._image()
        cases = [
            ({}, 'list of one operation'),
            (bitstream_body(image_id) * 2, 'list of one operation'),
            (bitstream_body(image_id, path='/name'),
             "path must be /bitstream, not '/name'"),
            (bitstream_body(image_id, op='remove'), 'op must be one of'),
            (bitstream_body([{'image_uuid': image_id}]),
             'value must be a UUID'),
            (bitstream_body('not-a-uuid'), "value must be a UUID, not "
                                           "'not-a-uuid'"),
            (bitstream_body(image_id, x=1), 'unknown key(s) x'),
            (['x'], 'the operation must be an object'),
        ]
        for data, text in cases:
            with self.subTest(data=data):
                self._refused(self.regions[0], data, 400, text,
                              suffix=ITSELF)

    def test_malformed_and_unknown_deployables(self):
        image_id = self._image()
        response = self._patch('not-a-uuid', bitstream_body(image_id), 400,
                               suffix=ITSELF)
        self.assertIn('Expected a UUID', response.json_body['error_message'])
        response = self._patch(str(uuid.uuid4()), bitstream_body(image_id),
                               404, suffix=ITSELF)
        self.assertIn('Deployable not found',
                      response.json_body['error_message'])

    def test_policy_refusal_is_403(self):
        policy_file = os.path.join(self.directory, 'policy.yaml')
        with open(policy_file, 'w') as rules_file:
            rules_file.write('"%s": "!"\n' % deployable_policies.PROGRAM)
        self.flags(policy_file=policy_file, group='oslo_policy')
        policies.reset()
        self._refused(self.regions[0], bitstream_body(self._image()), 403,
                      deployable_policies.PROGRAM, suffix=ITSELF)

    def test_the_conductors_refusals_are_the_same(self):
        self._refused(self.regions[0], bitstream_body(str(uuid.uuid4())),
                      400, 'not visible to the caller', suffix=ITSELF)
        self._refused(self.regions[0],
                      bitstream_body(self._image(board='u250')), 409,
                      'board', suffix=ITSELF)
        profile = records.make_device_profile(
            self.context, groups=[{'resources:FPGA': '1'}])
        records.make_arq(self.context, profile, hostname=HOST,
                         deployable_id=self.regions[0].id,
                         state=vocabulary.ARQState.BOUND)
        self._refused(self.regions[0], bitstream_body(self._image()), 409,
                      'in use by an accelerator request', suffix=ITSELF)

    def test_a_gpu_deployable_is_refused_naming_its_type(self):
        device = records.make_device(self.context, type='GPU',
                                     vendor='0x10de', hostname=HOST)
        gpu = records.make_deployable(self.context, device)
        agent = RecordingAgent(self.agent)
        image_id = self._image()
        expected = ('Deployable %s is on a GPU device: only FPGA regions can '
                    'be programmed.' % gpu.uuid)
        for data, suffix in ((program_body(image_id), ''),
                             (bitstream_body(image_id), ITSELF)):
            with self.subTest(suffix=suffix):
                response = self._refused(gpu, data, 400, expected,
                                         suffix=suffix)
                message = response.json_body['error_message']
                self.assertNotIn('board', message)
                self.assertNotIn('control path', message)
        self.assertEqual(0, agent.calls)


class ProgramFormsMySQLTest(ProgramFormsTest):

    backend = 'mysql'


class ProgramFormsPostgreSQLTest(ProgramFormsTest):

    backend = 'postgresql'
