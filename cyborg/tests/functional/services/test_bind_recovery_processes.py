"""A conductor process that dies mid-bind: its successor finishes the work.

Conductor, API and agent run as separate processes over RabbitMQ with
MariaDB or PostgreSQL (the fixtures of ``test_arq_processes``). The test
kills the conductor, records what ``arqs.record_bind`` leaves behind when a
conductor dies mid-bind (ARQs in BindStarted, one already claimed by the
dead conductor with an attach handle chosen), and starts a new conductor:
it must bind or fail every one of them and tell Nova once of each.
"""

import datetime
import uuid

import sqlalchemy as sa

from cyborg import objects
from cyborg.conductor import bind_transactions
from cyborg.conductor import binder
from cyborg.db import models
from cyborg.tests import base
from cyborg.tests.fixtures import processes
from cyborg.tests.functional.services import test_arq_processes as cases
from cyborg.tests.unit.db import records

# Long enough for the successor conductor to start on a loaded machine (the
# binds are recorded before it starts; at 6 s they timed out in a busy run),
# short enough that the hanging ARQ fails within the test's wait.
BIND_TIMEOUT = 12
# The conductors' settings ([conductor] below); the test claims with them.
SETTINGS = binder.BindSettings(workers=8, bind_timeout=BIND_TIMEOUT,
                               sweep_interval=1)
ARQ = models.ARQ.__table__


class BindRecoveryTestsMixin(cases.ArqProcessesMixin):

    def test_a_new_conductor_finishes_the_binds_of_a_dead_one(self):
        # The lease the dead conductor takes below lasts 3 intervals of 1 s.
        nova = self.useFixture(cases.NovaStandIn())
        deployables = self._start_services(
            {'fpgas': [cases.FPGA_A, dict(cases.FPGA_B, prepare='hang')],
             'gpus': [cases.T4_GPU]},
            {'nova': {'auth_type': 'admin_token', 'endpoint': nova.endpoint,
                      'token': 'nova-token'},
             'conductor': {'bind_timeout': SETTINGS.bind_timeout,
                           'bind_sweep_interval': SETTINGS.sweep_interval}})
        rp_a = deployables[cases.REGION_A]['rp_uuid']
        rp_b = deployables[cases.REGION_B]['rp_uuid']

        self.conductor.kill()
        self.services.remove(self.conductor)
        profile = records.make_device_profile(self.context)

        def recorded_bind(rp_uuid):
            arq = records.make_arq(
                self.context, profile, state='BindStarted',
                hostname=self.host, device_rp_uuid=rp_uuid,
                instance_uuid=str(uuid.uuid4()), project_id='project-1')
            return arq.uuid, arq.instance_uuid

        claimed, claimed_instance = recorded_bind(rp_a)
        work = bind_transactions.claim(
            self.context, [claimed], 'dead-conductor/1/x',
            datetime.datetime.utcnow(), SETTINGS.bind_time_limit,
            SETTINGS.lease).work
        chosen_handle = work[0].attach_handle_id
        waiting, waiting_instance = recorded_bind(rp_a)
        hanging, hanging_instance = recorded_bind(rp_b)

        successor = self.useFixture(processes.ServiceProcess(
            'cyborg-conductor', self.conductor.options))
        self.services.append(successor)

        def resolved():
            states = {arq_uuid: objects.ARQ.get_by_uuid(
                self.context, arq_uuid).state
                for arq_uuid in (claimed, waiting, hanging)}
            return states if 'BindStarted' not in states.values() else None

        self.assertEqual(
            {claimed: 'Bound', waiting: 'Bound', hanging: 'BindFailed'},
            self._wait_until(resolved, 'the recorded binds resolved'))
        arqs = {arq_uuid: objects.ARQ.get_by_uuid(self.context, arq_uuid)
                for arq_uuid in (claimed, waiting, hanging)}
        # The dead conductor's choice of handle is kept.
        self.assertEqual(chosen_handle, arqs[claimed].attach_handle_id)
        self.assertNotEqual(arqs[claimed].attach_handle_id,
                            arqs[waiting].attach_handle_id)
        self.assertIsNone(arqs[hanging].attach_handle_id)
        self._assert_handles_free(rp_b)
        self.assertIn('Taking over the binds of ARQs %s' % claimed,
                      successor.log())
        with self.database.engine.connect() as connection:
            self.assertEqual([None] * 3, list(connection.execute(
                sa.select(ARQ.c.bind_owner).where(ARQ.c.uuid.in_(
                    [claimed, waiting, hanging]))).scalars()))

        expected = {claimed: (claimed_instance, 'completed'),
                    waiting: (waiting_instance, 'completed'),
                    hanging: (hanging_instance, 'failed')}
        self._wait_until(lambda: all(nova.events_of(expected).values()),
                         'the events at the Nova stand-in')
        self.assertEqual(
            {arq_uuid: [{'name': cases.EVENT_NAME, 'server_uuid': server,
                         'tag': arq_uuid, 'status': status}]
             for arq_uuid, (server, status) in expected.items()},
            nova.events_of(expected))
        self._assert_clean_stop([self.api, successor])


class TestBindRecoveryMySQL(BindRecoveryTestsMixin, base.TestCase):
    backend = 'mysql'


class TestBindRecoveryPostgreSQL(BindRecoveryTestsMixin, base.TestCase):
    backend = 'postgresql'
