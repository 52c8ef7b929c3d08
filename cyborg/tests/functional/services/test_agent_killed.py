"""An agent killed while it prepares a bind or programs a region (issue 13,
point 5).

cyborg-api, -conductor and -agent run as separate processes over RabbitMQ
and MariaDB, with a real Placement (and, for programming, a real Glance in
the test process). The agent is killed (SIGKILL) in the middle of its work:

* preparing an attach handle that hangs (``prepare: hang`` in the fleet
  file): the ARQ ends BindFailed with a reason once ``bind_timeout`` has
  passed, Nova hears of it once and the handle is free; the agent started
  again binds the same deployable and another one;
* programming a region slowly (``program: {seconds: 30}``): the API
  answers 504 within ``program_timeout`` (and its margin), the region's
  programming lock is free at once, its recorded image is forgotten (the
  region may hold part of the new one) and the agent started again
  programs the region;
* loading the image of a bind that programs the region: the ARQ ends
  BindFailed after ``bind_timeout``, the handle and the region's lock are
  free, and the agent started again programs the region.
"""

import json
import os
import threading
import time
import uuid

import sqlalchemy as sa

from cyborg.clients import glance as glance_client
from cyborg import conf
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.db import models
from cyborg.tests import base
from cyborg.tests.fixtures import glance as glance_fixture
from cyborg.tests.functional.services import deployment
from cyborg.tests.functional.services import test_arq_processes as cases
from cyborg.tests.functional.services import \
    test_bind_recovery_processes as recovery
from cyborg.tests.functional.services import \
    test_program_processes as programs

DEPLOYABLE = models.Deployable.__table__
ARQ = models.ARQ.__table__
HANGING = 'Simulating a hanging prepare of deployable'
PROGRAM_SECONDS = 30
PROGRAM_TIMEOUT = 6
# The bind that programs gives up after this many seconds.
BIND_TIMEOUT = 10
REGION_ID = programs.REGION0_ID


def program_fleet(seconds):
    """One Intel card whose region programs in ``seconds``."""
    return {'fpgas': [{
        'vendor': '0x8086', 'vendor_name': 'intel', 'board': 'pac_arria10',
        'model': 'PAC Arria 10 GX', 'product_id': '0x09c4',
        'regions': [{'id': REGION_ID, 'pfs': 1, 'vfs_per_pf': 1,
                     'program': {'seconds': seconds, 'result': 'success'}}],
    }]}


class AgentKilledWhilePreparingTest(cases.ArqProcessesMixin, base.TestCase):

    backend = 'mysql'

    def test_bind_fails_and_the_handle_is_free(self):
        nova = self.useFixture(cases.NovaStandIn())
        fleet = {'fpgas': [cases.FPGA_A, dict(cases.FPGA_B, prepare='hang')],
                 'gpus': [cases.T4_GPU]}
        deployables = self._start_services(fleet, {
            'nova': {'auth_type': 'admin_token', 'endpoint': nova.endpoint,
                     'token': 'nova-token'},
            'conductor': {'bind_timeout': recovery.BIND_TIMEOUT,
                          'bind_sweep_interval':
                              recovery.SETTINGS.sweep_interval}})
        rp_a = deployables[cases.REGION_A]['rp_uuid']
        rp_b = deployables[cases.REGION_B]['rp_uuid']
        profile_a = self._create_profile('a-%s' % self.suffix,
                                         cases.region_trait(cases.REGION_A_ID))
        profile_b = self._create_profile('b-%s' % self.suffix,
                                         cases.region_trait(cases.REGION_B_ID))

        # 1. The agent hangs preparing B's handle and is killed.
        arq = self._create_arq(profile_b['name'])
        instance_uuid = str(uuid.uuid4())
        self._bind(arq['uuid'], rp_b, instance_uuid)
        self._wait_until(lambda: HANGING in self.agent.log(),
                         'the agent preparing the hanging handle')
        self.assertEqual(1, len([held for held in self._held_handle_ids(
            [arq['uuid']]).values() if held]))
        killed_at = time.monotonic()
        self.agent.kill()
        self.services.remove(self.agent)

        # 2. The bind fails once bind_timeout has passed, saying so; the
        # handle is free and Nova is told once.
        resolved = self._resolved(instance_uuid)
        waited = time.monotonic() - killed_at
        self.assertEqual(['BindFailed'], [item['state'] for item in resolved])
        self.assertLess(waited, recovery.BIND_TIMEOUT + 10)
        with self.database.engine.connect() as connection:
            reason = connection.execute(
                sa.select(ARQ.c.state_reason).where(
                    ARQ.c.uuid == arq['uuid'])).scalar_one()
        self.assertIn('bind_timeout', reason or '')
        self.assertEqual({arq['uuid']: None},
                         self._held_handle_ids([arq['uuid']]))
        self._assert_handles_free(rp_b)
        expected = {arq['uuid']: [{
            'name': cases.EVENT_NAME, 'server_uuid': instance_uuid,
            'tag': arq['uuid'], 'status': 'failed'}]}
        self._wait_until(lambda: nova.events_of(expected)[arq['uuid']],
                         'the failed event at the Nova stand-in')
        self.assertEqual(expected, nova.events_of(expected))

        # 3. The agent comes back with B no longer hanging: a new bind
        # takes B's handle again, and one of A's.
        fleet['fpgas'][1] = cases.FPGA_B
        deployment.write_fleet(self.fleet_path, fleet)
        self._restart_agent()
        self._wait_until(self._reports_done, 'a report of the new agent')
        for profile, rp_uuid in ((profile_b, rp_b), (profile_a, rp_a)):
            again = self._create_arq(profile['name'])
            server = str(uuid.uuid4())
            self._bind(again['uuid'], rp_uuid, server)
            self._assert_bound(self._resolved(server)[0], rp_uuid, server)
        self.assertEqual(expected, nova.events_of(expected))
        self._assert_clean_stop([self.agent])
        self._assert_clean_stop([self.api, self.conductor])


class AgentKilledWhileProgrammingTest(deployment.DeploymentMixin,
                                      base.TestCase):

    backend = 'mysql'

    def setUp(self):
        super().setUp()
        self.glance = self.useFixture(glance_fixture.GlanceFixture())
        glance_options = {'glance': {'auth_type': 'none',
                                     'endpoint_override': self.glance.endpoint}}
        timeout = {'conductor': {'program_timeout': PROGRAM_TIMEOUT}}
        binds = {'conductor': {'program_timeout': PROGRAM_TIMEOUT,
                               'bind_timeout': BIND_TIMEOUT,
                               'bind_sweep_interval': 1}}
        self._start_services(program_fleet(PROGRAM_SECONDS),
                             conductor_options=dict(glance_options, **binds),
                             agent_options=glance_options,
                             api_options=timeout)
        self.images = glance_client.GlanceClient(conf.CONF)
        self.region = self._wait_until(self._region, 'the first report')

    def _region(self):
        try:
            status, answer = self._api('GET', '/v2/deployables')
        except ConnectionError:
            return None  # the API is not listening yet
        if status != 200:
            return None
        for item in answer['deployables']:
            if item['name'] == programs.REGION % 0 and item['rp_uuid']:
                return item
        return None

    def _image(self):
        properties = {
            'bs-name': 'aes-256', 'bs-uuid': str(uuid.uuid4()),
            'vendor': '0x8086', 'board': 'pac_arria10', 'version': '2.1',
            'driver_ver': '1.0', 'driver_path': '/opt/intel/opae',
            'region_uuid': REGION_ID, 'function_uuid': programs.NEW_FUNCTION,
            'function_name': 'aes',
            'topology': json.dumps(programs.TOPOLOGY)}
        path = os.path.join(self.state_path, 'aes.gbs')
        with open(path, 'wb') as data:
            data.write(os.urandom(4096))
        return self.images.upload(path, 'aes-256', properties, ('FPGA',))['id']

    def _program(self, image_id):
        return self._api(
            'PATCH', '/v2/deployables/%s/program' % self.region['uuid'],
            [{'path': '/program', 'op': 'replace',
              'value': [{'image_uuid': image_id}]}])

    def _lock(self):
        with self.database.engine.connect() as connection:
            return connection.execute(
                sa.select(DEPLOYABLE.c.programming_owner,
                          DEPLOYABLE.c.programming_expires_at,
                          DEPLOYABLE.c.bitstream_id).where(
                    DEPLOYABLE.c.uuid == self.region['uuid'])).one()

    def _restart_agent_programming_quickly(self):
        deployment.write_fleet(self.fleet_path, program_fleet(0.2))
        self._restart_agent()
        self._wait_until(self._reports_done, 'a report of the new agent')

    def _use_fleet(self, seconds):
        """Have the agent program in ``seconds`` from its next discovery."""
        deployment.write_fleet(self.fleet_path, program_fleet(seconds))
        self._wait_for_reports(2, 'programming in %s s' % seconds)

    def test_program_answers_and_frees_the_lock(self):
        # The region holds an image first.
        self._use_fleet(0.2)
        old_image = self._image()
        status, body = self._program(old_image)
        self.assertEqual(200, status, body)
        self.assertEqual((None, None, old_image), tuple(self._lock()))
        self._use_fleet(PROGRAM_SECONDS)
        image_id = self._image()
        answers = []
        started = time.monotonic()
        request = threading.Thread(
            target=lambda: answers.append(self._program(image_id)))
        request.start()
        try:
            self._wait_until(lambda: 'with image %s: started' % image_id
                             in self.agent.log(), 'programming started')
            self.assertIsNotNone(self._lock().programming_owner)
            self.agent.kill()
            self.services.remove(self.agent)
        finally:
            request.join(60)
        took = time.monotonic() - started
        self.assertEqual(1, len(answers), 'the API did not answer')
        status, body = answers[0]
        self.assertEqual(504, status, body)
        self.assertIn('did not answer within %d seconds' % PROGRAM_TIMEOUT,
                      json.dumps(body))
        self.assertLess(took, PROGRAM_TIMEOUT
                        + conductor_rpcapi.PROGRAM_ANSWER_MARGIN)
        # The lock is free at once; the region may hold part of the new
        # image, no longer the old one: its image is unknown.
        self.assertEqual((None, None, None), tuple(self._lock()))

        # The agent comes back (programming quicker now): the region
        # programs at the first try, not refused as being programmed.
        self._restart_agent_programming_quickly()
        status, body = self._program(image_id)
        self.assertEqual(200, status, '%s\n%s' % (body, self._logs()))
        self.assertEqual(image_id, body['bitstream_id'])
        self.assertEqual((None, None, image_id), tuple(self._lock()))
        self._assert_clean_stop([self.agent])
        self._assert_clean_stop([self.api, self.conductor])

    def test_bind_that_programs_fails_and_frees_the_region(self):
        image_id = self._image()
        profile = 'aes-%s' % self.suffix
        status, body = self._api('POST', '/v2/device_profiles', [{
            'name': profile,
            'groups': [{'resources:FPGA': '1',
                        'trait:' + cases.region_trait(REGION_ID): 'required',
                        'accel:bitstream_id': image_id}]}])
        self.assertEqual(201, status, body)
        status, body = self._api('POST', '/v2/accelerator_requests',
                                 {'device_profile_name': profile})
        self.assertEqual(201, status, body)
        arq_uuid = body['arqs'][0]['uuid']
        status, body = self._api('PATCH', '/v2/accelerator_requests', {
            arq_uuid: cases.bind_ops(self.host, self.region['rp_uuid'],
                                     str(uuid.uuid4()))})
        self.assertEqual(202, status, body)
        self._wait_until(lambda: 'Loading image %s into deployable' % image_id
                         in self.agent.log(), 'the bind loading the image')
        self.assertIsNotNone(self._lock().programming_owner)
        self.agent.kill()
        self.services.remove(self.agent)

        def resolved():
            with self.database.engine.connect() as connection:
                row = connection.execute(
                    sa.select(ARQ.c.state, ARQ.c.state_reason,
                              ARQ.c.attach_handle_id).where(
                        ARQ.c.uuid == arq_uuid)).one()
            return row if row.state != 'BindStarted' else None

        row = self._wait_until(resolved, 'the bind resolved',
                               timeout=BIND_TIMEOUT + 15)
        self.assertEqual('BindFailed', row.state)
        self.assertIn('bind_timeout', row.state_reason or '')
        self.assertIsNone(row.attach_handle_id)
        # The region's lock is freed, and what it holds is unknown, once
        # the binder's call to the dead agent has timed out too (the sweep
        # may have failed the ARQ a moment before).
        self._wait_until(lambda: tuple(self._lock()) == (None, None, None),
                         'the region freed and unknown', timeout=15)
        with self.database.engine.connect() as connection:
            self.assertEqual([False], [bool(in_use) for in_use in
                                       connection.execute(
                sa.select(models.AttachHandle.in_use)).scalars()])

        self._restart_agent_programming_quickly()
        status, body = self._program(image_id)
        self.assertEqual(200, status, '%s\n%s' % (body, self._logs()))
        self._assert_clean_stop([self.agent])
        self._assert_clean_stop([self.api, self.conductor])
