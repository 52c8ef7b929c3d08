"""The conductor's programming workflow and how it reads the agent's answer.

``Programmer`` runs against a real database and a real Glance
(``cyborg.tests.fixtures.glance``); only the agent is a stand-in, scripted
with the answer (or the timeout) a host gives, as the edge of the process.
"""

import os
import uuid

import fixtures
import oslo_messaging

from cyborg.common import vocabulary
from cyborg import conf
from cyborg import context as cyborg_context
from cyborg.clients import glance as glance_client
from cyborg.conductor import programming
from cyborg.db.queries import deployables as deployable_queries
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.fixtures import glance as glance_fixture
from cyborg.tests.unit.db import records

Result = vocabulary.ProgramResult


class ScriptedAgents:
    """Stands in for AgentAPI: answers ``program`` with ``answer`` (a dict,
    or an exception to raise), after running ``during`` if given."""

    def __init__(self, answer, during=None):
        self.answer = answer
        self.during = during
        self.calls = []

    def program(self, context, host, **kwargs):
        self.calls.append(dict(kwargs, host=host))
        if self.during is not None:
            self.during()
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


class ProgrammerTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(database.Database('sqlite'))
        self.useFixture(glance_fixture.GlanceFixture())
        self.context = cyborg_context.get_admin_context()
        device = records.make_device(
            self.context, vendor='0x8086', hostname='compute-1',
            vendor_board_info='{"board": "pac_arria10"}')
        self.deployable = records.make_deployable(self.context, device)
        self.image_id = self._image()

    def _image(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path, 'bs')
        with open(path, 'wb') as data:
            data.write(b'bitstream')
        properties = {'bs-name': 'aes', 'bs-uuid': str(uuid.uuid4()),
                      'vendor': 'intel', 'board': 'PAC_ARRIA10',
                      'version': '1', 'driver_ver': '1', 'driver_path': '/',
                      'function_uuid': str(uuid.uuid4())}
        return glance_client.GlanceClient(conf.CONF).upload(
            path, 'aes', properties, ['FPGA'])['id']

    def _program(self, agents):
        programmer = programming.Programmer(
            'conductor-1', programming.ProgramSettings(timeout=30), agents,
            glance_for=lambda context: glance_client.GlanceClient(
                conf.CONF, context))
        return programmer.program(self.context, self.deployable.uuid,
                                  self.image_id)

    def _row(self):
        return deployable_queries.get_by_uuid(self.context,
                                              self.deployable.uuid)[0]

    def _assert_unchanged(self):
        row = self._row()
        self.assertIsNone(row.bitstream_id)
        self.assertIsNone(row.programming_owner)

    def test_success_names_the_driver_and_region_and_records(self):
        agents = ScriptedAgents({'code': 0, 'message': 'loaded'})

        deployable = self._program(agents)

        self.assertEqual(self.image_id, deployable.bitstream_id)
        self.assertEqual([{'host': 'compute-1', 'driver_name': 'fake_driver',
                           'deployable_name': self.deployable.name,
                           'image_id': self.image_id, 'timeout': 30}],
                         agents.calls)

    def test_each_failure_code_has_its_exception(self):
        cases = [(Result.FAILED, programming.ProgrammingFailed, 502),
                 (Result.INVALID_DEPLOYABLE,
                  programming.DeployableNotProgrammable, 404),
                 (Result.INVALID_BITSTREAM, programming.BitstreamRejected,
                  400),
                 (99, programming.ProgrammingFailed, 502)]
        for code, error_class, status in cases:
            with self.subTest(code=code):
                agents = ScriptedAgents({'code': int(code),
                                         'message': 'said the host'})
                error = self.assertRaises(error_class, self._program, agents)
                self.assertEqual(status, error.code)
                self.assertIn('said the host', error.message)
                self._assert_unchanged()

    def test_an_agent_that_does_not_answer_is_a_gateway_timeout(self):
        agents = ScriptedAgents(oslo_messaging.MessagingTimeout('late'))

        error = self.assertRaises(programming.AgentTimeout, self._program,
                                  agents)

        self.assertEqual(504, error.code)
        self._assert_unchanged()

    def test_an_unknown_outcome_forgets_the_previous_image(self):
        # The agent died (no answer) or its driver failed midway: the
        # region may hold part of the new image, not the old one any more.
        for answer, error_class in [
                (oslo_messaging.MessagingTimeout('late'),
                 programming.AgentTimeout),
                ({'code': int(Result.FAILED), 'message': 'midway'},
                 programming.ProgrammingFailed)]:
            with self.subTest(error=error_class.__name__):
                deployable_queries.update(self.context, self.deployable.uuid,
                                          {'bitstream_id': 'old-image'})

                self.assertRaises(error_class, self._program,
                                  ScriptedAgents(answer))

                self._assert_unchanged()

    def test_a_refusal_keeps_the_previous_image(self):
        # The host refused before loading anything.
        for code, error_class in [
                (Result.INVALID_DEPLOYABLE,
                 programming.DeployableNotProgrammable),
                (Result.INVALID_BITSTREAM, programming.BitstreamRejected)]:
            with self.subTest(code=code):
                deployable_queries.update(self.context, self.deployable.uuid,
                                          {'bitstream_id': 'old-image'})

                self.assertRaises(error_class, self._program,
                                  ScriptedAgents({'code': int(code),
                                                  'message': 'no'}))

                row = self._row()
                self.assertEqual(('old-image', None),
                                 (row.bitstream_id, row.programming_owner))

    def test_a_lock_lost_while_programming_records_nothing(self):
        def steal():
            # As a request would once the lock had run out.
            later = self._row().programming_expires_at
            deployable_queries.start_programming(
                self.context, self.deployable.uuid, 'thief', later,
                later.replace(year=later.year + 1))

        agents = ScriptedAgents({'code': 0, 'message': 'loaded'}, steal)

        self.assertRaises(programming.ProgrammingLockLost, self._program,
                          agents)
        row = self._row()
        self.assertIsNone(row.bitstream_id)
        self.assertEqual('thief', row.programming_owner)

    def test_only_fpga_deployables_are_programmed(self):
        # Before the lock, Glance and the agent: a 400 naming the
        # deployable and its device type, nothing changed.
        for device_type in ('GPU', 'QAT', 'AICHIP'):
            with self.subTest(device_type=device_type):
                device = records.make_device(
                    self.context, type=device_type, hostname='compute-1')
                self.deployable = records.make_deployable(self.context,
                                                          device)
                agents = ScriptedAgents({'code': 0, 'message': 'loaded'})
                self.useFixture(fixtures.MockPatchObject(
                    glance_client.GlanceClient, 'get_image',
                    side_effect=AssertionError('Glance was asked')))

                error = self.assertRaises(
                    programming.DeviceTypeNotProgrammable, self._program,
                    agents)

                self.assertEqual(400, error.code)
                self.assertEqual(
                    'Deployable %s is on a %s device: only FPGA regions can '
                    'be programmed.' % (self.deployable.uuid, device_type),
                    error.message)
                self.assertEqual([], agents.calls)
                self._assert_unchanged()
