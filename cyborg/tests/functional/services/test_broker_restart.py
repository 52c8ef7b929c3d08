"""RabbitMQ restarted in the middle of binds and reports (issue 13).

cyborg-api, -conductor and -agent run as separate processes (the scenario
of ``test_arq_processes``, MariaDB, Nova's stand-in) on a RabbitMQ node of
the test's own (``rabbit_server.RabbitServer``; the shared one on 5672 is
never stopped). Twenty binds across the fleet are accepted while the agent
is frozen, the broker is stopped with their prepare calls in it and while
the agent reports, and started again a few seconds later on the same port
and data. No service is restarted: every lost prepare call is made again
(``[conductor] prepare_call_timeout``) and every ARQ must end Bound within
bind_timeout; Nova must hear once of each instance, the agent's heartbeats
and reports must resume (a card added after the restart reaches the API),
and the API must answer a write sent during the outage with 503 and
Cyborg's error body, before the broker is back, and writes normally
afterwards.

``TestCallsAcrossARestart`` checks the same in one process, on cyborg.rpc:
a call to a topic nobody listens on, or while the broker is down, gives up
as a ServiceUnavailable; a server answers again once the broker is back.
"""

from concurrent import futures
import json
import threading
import time
import uuid

import oslo_messaging
from testtools import content

from cyborg import conf
from cyborg import context as cyborg_context
from cyborg import rpc
from cyborg.tests import base
from cyborg.tests.fixtures import messaging
from cyborg.tests.fixtures import processes
from cyborg.tests.fixtures import rabbit_server
from cyborg.tests.functional.services import deployment
from cyborg.tests.functional.services import test_arq_processes as cases

# Longer than the outage and the services' reconnection (their backoff
# grows: 1, 3, 5... s): an ARQ whose prepare call the broker lost with the
# agent's queue is asked for again meanwhile, and must not fail.
BIND_TIMEOUT = 40
# How long the binder waits for one prepare call before asking again.
PREPARE_CALL_TIMEOUT = 5
# Enough for the binder to send its calls once it holds the handles.
CALL_SENT_SECONDS = 0.5
# How long the broker stays down, not counting its start: longer than a
# call tries to reach it (rpc.CALL_RETRIES, about 8 s).
OUTAGE_SECONDS = 9
# The logger of oslo.messaging's RabbitMQ driver, which logs a connection
# reset in the middle of an acknowledgement with its traceback.
RABBIT_DRIVER_LOGGERS = ('oslo.messaging._drivers.impl_rabbit',)
# The FPGA region gets ten handles (two PFs of five VFs), the GPU ten vGPUs:
# one handle for each of the twenty ARQs.
BINDS_PER_KIND = 10
FPGA_A = dict(cases.FPGA_A, regions=[
    {'id': cases.REGION_A_ID, 'pfs': 2, 'vfs_per_pf': 5}])
T4_GPU = dict(cases.T4_GPU, vgpu_types=[
    dict(cases.T4_GPU['vgpu_types'][0], instances=BINDS_PER_KIND)])
FLEET = {'fpgas': [FPGA_A, cases.FPGA_B], 'gpus': [T4_GPU]}
# Added after the restart: it sits in the next slot, PCI bus 0x13.
ADDED_GPU = 'gpu-0000:13:00.0-nvidia-222'


class BrokerRestartTestsMixin(cases.ArqProcessesMixin):

    def setUp(self):
        super().setUp()
        # The services' broker: every message of this test goes through it.
        self.rabbit = self.useFixture(rabbit_server.RabbitServer())

    def _api_timed(self, method, path, body=None, timeout=60):
        """(status, body, seconds) of one request; status None if it failed."""
        started = time.monotonic()
        try:
            status, answer = deployment.api_request(
                self.api_port, method, path, body, timeout=timeout)
        except OSError as error:
            status, answer = None, repr(error)
        return status, answer, time.monotonic() - started

    def _agent_heartbeat(self):
        service = self._heartbeat_of(self.host, 'cyborg-agent')
        return service.report_count if service is not None else 0

    def _state_reason(self, arq_uuid):
        status, arq = deployment.api_request(
            self.api_port, 'GET', '/v2/accelerator_requests/%s' % arq_uuid,
            headers={'OpenStack-API-Version': 'accelerator 2.3'})
        self.assertEqual(200, status, arq)
        return arq.get('state_reason') or ''

    def _failures(self, arq_uuids):
        """The reasons of the ARQs of ``arq_uuids`` that failed."""
        return {arq_uuid: self._state_reason(arq_uuid)
                for arq_uuid in arq_uuids
                if self._get_arq(arq_uuid)['state'] == 'BindFailed'}

    def _arq_states(self, arq_uuids):
        states = {}
        for arq_uuid in arq_uuids:
            states[arq_uuid] = self._get_arq(arq_uuid)['state']
        return states

    def test_binds_and_reports_survive_a_broker_restart(self):
        nova = self.useFixture(cases.NovaStandIn())
        deployables = self._start_services(
            FLEET,
            {'nova': {'auth_type': 'admin_token', 'endpoint': nova.endpoint,
                      'token': 'nova-token'},
             'conductor': {'bind_timeout': BIND_TIMEOUT,
                           'prepare_call_timeout': PREPARE_CALL_TIMEOUT,
                           'bind_sweep_interval': 1}})
        rp_fpga = deployables[cases.REGION_A]['rp_uuid']
        rp_gpu = deployables[cases.VGPU_T4_1B]['rp_uuid']
        self.assertEqual(BINDS_PER_KIND, len(self._handles(rp_fpga)))
        self.assertEqual(BINDS_PER_KIND, len(self._handles(rp_gpu)))

        # 1. Twenty ARQs, each for its own instance, half on each card.
        fpga = self._create_profile('fpga-%s' % self.suffix,
                                    cases.region_trait(cases.REGION_A_ID))
        vgpu = self._create_profile('vgpu-%s' % self.suffix,
                                    cases.VGPU_T4_1B_TRAIT, 'VGPU')
        providers = {}
        for profile, rp_uuid in ((fpga, rp_fpga), (vgpu, rp_gpu)):
            for _ in range(BINDS_PER_KIND):
                providers[self._create_arq(profile['name'])['uuid']] = rp_uuid
        instances = {arq_uuid: str(uuid.uuid4()) for arq_uuid in providers}

        # 2. The binds go in five requests at once while the agent is
        # frozen, so that the binder's prepare calls are in the broker (or
        # unread on the agent's connection) when it stops: they are lost
        # with it, its queues not being durable. The agent runs again at
        # once, the broker being down.
        def bind(arq_uuids):
            return self._api('PATCH', '/v2/accelerator_requests', {
                arq_uuid: cases.bind_ops(self.host, providers[arq_uuid],
                                         instances[arq_uuid])
                for arq_uuid in arq_uuids})

        arq_uuids = sorted(providers)
        batches = [arq_uuids[start::5] for start in range(5)]
        self.agent.pause()
        try:
            with futures.ThreadPoolExecutor(len(batches)) as pool:
                answers = list(pool.map(bind, batches))
            accepted_at = time.monotonic()
            self.assertEqual([202] * len(batches),
                             [status for status, _ in answers],
                             '%s\n%s' % (answers, self._logs()))
            # The binder calls the agent as soon as it holds the handles.
            self._wait_until(
                lambda: all(self._held_handle_ids(arq_uuids).values()),
                'the handles of the twenty binds taken')
            time.sleep(CALL_SENT_SECONDS)
            self.rabbit.stop()
            stopped_at = time.monotonic()
        finally:
            self.agent.resume()
        states_at_stop = self._arq_states(arq_uuids)
        self.assertEqual(dict.fromkeys(arq_uuids, 'BindStarted'),
                         states_at_stop)

        # 3. While the broker is down, an API write (it needs the
        # conductor) is sent: what it answers, and when, is recorded.
        write = {}
        writer = threading.Thread(target=lambda: write.update(answer=(
            self._api_timed('POST', '/v2/accelerator_requests',
                            {'device_profile_name': fpga['name']}))))
        writer.start()
        time.sleep(OUTAGE_SECONDS)
        self.rabbit.start()
        restarted_at = time.monotonic()
        heartbeats_at_restart = self._agent_heartbeat()
        writer.join(60)
        self.assertFalse(writer.is_alive(), 'the API write never ended')

        # 4. Every ARQ ends Bound, each to its own handle, within
        # bind_timeout of its bind and without any service restarted: each
        # prepare call (or its answer) the stopped broker lost is made
        # again, and the agent answers it, from what it did if it got the
        # first; none fails for an agent that "did not answer".
        def resolved():
            states = self._arq_states(arq_uuids)
            return states if 'BindStarted' not in states.values() else None

        states = self._wait_until(resolved, 'the twenty binds resolved',
                                  timeout=BIND_TIMEOUT + 10)
        resolved_after = time.monotonic() - accepted_at
        self.addDetail('binds', content.text_content(
            'all resolved after %.1f s; calls made again: %d; answered '
            'again by the agent: %d' % (
                resolved_after, self.conductor.log().count(
                    'Asking the agent of'),
                self.agent.log().count('answering again'))))
        self.assertEqual(dict.fromkeys(arq_uuids, 'Bound'), states,
                         'at the stop: %s\n%s\n%s' % (
                             states_at_stop, self._failures(arq_uuids),
                             self._logs()))
        self.assertLess(resolved_after, BIND_TIMEOUT, states)
        for arq_uuid in arq_uuids:
            self._assert_bound(self._get_arq(arq_uuid), providers[arq_uuid],
                               instances[arq_uuid])

        # 5. Nova hears exactly once of each instance.
        expected = {arq_uuid: [{'name': cases.EVENT_NAME,
                                'server_uuid': instances[arq_uuid],
                                'tag': arq_uuid, 'status': 'completed'}]
                    for arq_uuid in arq_uuids}
        self._wait_until(lambda: all(nova.events_of(arq_uuids).values()),
                         'the events at the Nova stand-in')
        self.assertEqual(expected, nova.events_of(arq_uuids))

        # 6. The agent's heartbeats advance and a card added after the
        # restart reaches the API through its reports.
        self._wait_until(
            lambda: self._agent_heartbeat() >= heartbeats_at_restart + 2,
            'agent heartbeats after the restart')
        deployment.write_fleet(self.fleet_path, dict(
            FLEET, gpus=[T4_GPU, cases.T4_GPU]))

        def added_gpu_listed():
            status, body = self._api('GET', '/v2/deployables?name=%s'
                                     % ADDED_GPU)
            return status == 200 and body['deployables']

        self._wait_until(added_gpu_listed, 'the added GPU in the API')

        # 7. The API write sent during the outage was answered 503 with
        # Cyborg's error body once the conductor's broker had been tried
        # for a while (rpc.CALL_RETRIES), well before the broker was back;
        # writes are answered normally again.
        status, body, seconds = write['answer']
        self.addDetail('outage-write', content.text_content(
            'POST during the outage: %s after %.1f s (broker back after '
            '%.1f s): %s' % (status, seconds, restarted_at - stopped_at,
                             body)))
        self.assertEqual(503, status, body)
        fault = json.loads(body['error_message'])
        self.assertEqual(('Server', 'Service unavailable: the message bus '
                          'cannot be reached.'),
                         (fault['faultcode'], fault['faultstring']))
        self.assertLess(seconds, restarted_at - stopped_at)
        self._create_arq(fpga['name'])

        # 8. The broker's start time (the brief asks to know it).
        self.addDetail('broker-start-seconds', content.text_content(
            ', '.join('%.1f' % seconds
                      for seconds in self.rabbit.start_seconds)))
        # A broker that goes away while a service acknowledges a message
        # makes oslo.messaging log the reset with its traceback (it then
        # reconnects and the call is retried): the outage this test makes,
        # not an error of cyborg's.
        self._assert_clean_stop([self.agent], RABBIT_DRIVER_LOGGERS)
        self._assert_clean_stop([self.api, self.conductor],
                                RABBIT_DRIVER_LOGGERS)


class TestBrokerRestartMySQL(BrokerRestartTestsMixin, base.TestCase):
    backend = 'mysql'


class Pinged:
    """An endpoint answering ``ping``."""

    @oslo_messaging.expose
    def ping(self, context):
        return 'pong'


class TestCallsAcrossARestart(base.TestCase):
    """cyborg.rpc in this process: a call to nobody, or while the broker is
    down, gives up as a ServiceUnavailable; its server resubscribes when the
    broker is back."""

    def test_call_gives_up_while_the_broker_is_down(self):
        server = self.useFixture(rabbit_server.RabbitServer())
        bus = self.useFixture(messaging.Messaging(
            conf.CONF, server.transport_url))
        bus.serve('cyborg-pinged', 'host-1', [Pinged()])
        client = rpc.get_client(oslo_messaging.Target(topic='cyborg-pinged',
                                                      server='host-1'))
        context = cyborg_context.get_admin_context()
        # The first call makes the reply queue, with oslo.messaging's
        # unlimited reconnections: it needs the broker up.
        self.assertEqual('pong', client.call(context, 'ping'))
        # A topic nobody listens on is refused at once, not after a timeout.
        nobody = rpc.get_client(oslo_messaging.Target(topic='cyborg-nobody',
                                                      server='host-1'))
        started = time.monotonic()
        error = self.assertRaises(rpc.ServerNotListening, nobody.call,
                                  context, 'ping')
        self.assertLess(time.monotonic() - started, 2)
        self.assertIsInstance(error, oslo_messaging.MessageDeliveryFailure)
        self.assertEqual(503, error.code)

        server.stop()
        started = time.monotonic()
        error = self.assertRaises(oslo_messaging.MessageDeliveryFailure,
                                  client.call, context, 'ping')
        # rpc.CALL_RETRIES reconnections take about 8 s.
        self.assertLess(time.monotonic() - started, 20)
        self.assertIsInstance(error, rpc.MessageBusUnavailable)
        self.assertEqual(503, error.code)

        server.start()
        answer = processes.wait_until(
            lambda: _ping_once(client, context), 'a ping answered', [],
            timeout=30, interval=0.5)
        self.assertEqual('pong', answer)


def _ping_once(client, context):
    try:
        return client.call(context, 'ping')
    except oslo_messaging.MessagingException:
        return None
