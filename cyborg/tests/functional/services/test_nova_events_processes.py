"""Nova told of every resolved ARQ, with the services as separate processes.

The scenario of ``test_arq_processes`` (``ArqProcessesMixin``: cyborg-api,
-conductor and -agent over RabbitMQ, a real database and Placement) with
``[nova]`` pointing at its ``NovaStandIn``: every ARQ that resolves is told
to Nova once, as bound or as failed (no handle left, prepare failed, the
agent hanging and then dead), and the events carry Nova's microversion and
the configured token.
"""

import time
import uuid

from cyborg.tests import base
from cyborg.tests.functional.services import test_arq_processes as cases

# Short, so that a bind the agent never finishes fails within the test.
BIND_TIMEOUT = 3


class NovaEventsTestsMixin(cases.ArqProcessesMixin):
    """With [nova] at a stand-in: every resolved ARQ is told to Nova, those
    that failed (no handle left, prepare failed, agent died) too."""

    def test_nova_told_of_bound_failed_and_timed_out_arqs(self):
        nova = self.useFixture(cases.NovaStandIn())
        deployables = self._start_services(
            {'fpgas': [cases.FPGA_A, dict(cases.FPGA_B, prepare='hang')],
             'gpus': [dict(cases.T4_GPU, prepare='fail')]},
            {'nova': {'auth_type': 'admin_token', 'endpoint': nova.endpoint,
                      'token': 'nova-token'},
             'conductor': {'bind_timeout': BIND_TIMEOUT,
                           'bind_sweep_interval': 1}})
        rp_a = deployables[cases.REGION_A]['rp_uuid']
        rp_b = deployables[cases.REGION_B]['rp_uuid']

        # 1. One ARQ bound: one completed event for its instance.
        profile_a = self._create_profile('fpga-a-%s' % self.suffix,
                                         cases.region_trait(cases.REGION_A_ID))
        arq = self._create_arq(profile_a['name'])
        instance_uuid = str(uuid.uuid4())
        self._bind(arq['uuid'], rp_a, instance_uuid)
        self._assert_bound(self._resolved(instance_uuid)[0], rp_a,
                           instance_uuid)
        self._assert_events(nova, {arq['uuid']: (instance_uuid, 'completed')})
        posts = [request for request in nova.requests
                 if request[0] == 'POST']
        self.assertEqual(('compute 2.82', 'nova-token'),
                         (posts[0][2].get('openstack-api-version'),
                          posts[0][2].get('x-auth-token')), posts[0])
        self._expect(204, 'DELETE', '/v2/accelerator_requests?instance=%s'
                     % instance_uuid)
        self._assert_handles_free(rp_a)

        # 2. Five binds at once for two handles: two completed events and
        # three failed ones, one per ARQ, each for its own instance.
        resolved, instances = self._bind_concurrently(profile_a['name'],
                                                      rp_a, 5)
        self._assert_each_handle_used_once(resolved, rp_a, instances)
        self._assert_events(nova, {
            arq_uuid: (instances[arq_uuid],
                       'completed' if item['state'] == 'Bound' else 'failed')
            for arq_uuid, item in resolved.items()})
        self._expect(204, 'DELETE', '/v2/accelerator_requests?arqs=%s'
                     % ','.join(resolved))
        self._assert_handles_free(rp_a)

        # 3. The agent fails to prepare the vGPU: BindFailed, the handle
        # free again, Nova told.
        profile_gpu = self._create_profile('vgpu-%s' % self.suffix,
                                           cases.VGPU_T4_1B_TRAIT, 'VGPU')
        arq = self._create_arq(profile_gpu['name'])
        instance_uuid = str(uuid.uuid4())
        self._bind(arq['uuid'], deployables[cases.VGPU_T4_1B]['rp_uuid'],
                   instance_uuid)
        self._assert_failed(self._resolved(instance_uuid), arq['uuid'],
                            deployables[cases.VGPU_T4_1B]['rp_uuid'])
        self._assert_events(nova, {arq['uuid']: (instance_uuid, 'failed')})

        # 4. The agent hangs preparing region B's handle and then dies: the
        # ARQ fails after bind_timeout, its handle is free and Nova is told.
        profile_b = self._create_profile('fpga-b-%s' % self.suffix,
                                         cases.region_trait(cases.REGION_B_ID))
        arq = self._create_arq(profile_b['name'])
        instance_uuid = str(uuid.uuid4())
        started = time.monotonic()
        self._bind(arq['uuid'], rp_b, instance_uuid)
        self._wait_until(
            lambda: ('Simulating a hanging prepare of deployable %s'
                     % cases.REGION_B) in self.agent.log(),
            'the agent hanging in prepare')
        # Meanwhile the ARQ is BindStarted, and Nova's resolved list locked.
        self.assertEqual('BindStarted', self._get_arq(arq['uuid'])['state'])
        self._expect(423, 'GET', '/v2/accelerator_requests?instance=%s'
                     '&bind_state=resolved' % instance_uuid)
        self.agent.kill()
        self.services.remove(self.agent)
        self._assert_failed(self._resolved(instance_uuid), arq['uuid'], rp_b)
        # Not before bind_timeout, counted from the bind's recorded start
        # (kept to the microsecond on every backend, MariaDB included).
        self.assertGreaterEqual(time.monotonic() - started, BIND_TIMEOUT)
        self._assert_events(nova, {arq['uuid']: (instance_uuid, 'failed')})

        # 5. The API and the conductor stop cleanly on SIGTERM, having told
        # Nova once of each of the 8 ARQs, even though the call to the dead
        # agent also ended (it is bounded by bind_timeout too) meanwhile.
        time.sleep(max(0.0, started + BIND_TIMEOUT + 1 - time.monotonic()))
        self._assert_clean_stop([self.api, self.conductor])
        events = nova.events()
        self.assertEqual(8, len(events), events)
        self.assertEqual(8, len({event['tag'] for event in events}), events)

    def _assert_failed(self, resolved, arq_uuid, rp_uuid):
        """``resolved`` is the one ARQ, BindFailed, holding no handle."""
        self.assertEqual([arq_uuid], [item['uuid'] for item in resolved])
        self.assertEqual(('BindFailed', '', None, {}),
                         (resolved[0]['state'],
                          resolved[0]['attach_handle_type'],
                          resolved[0]['attach_handle_uuid'],
                          resolved[0]['attach_handle_info']),
                         '%s\n%s' % (resolved[0], self._logs()))
        self.assertEqual({arq_uuid: None}, self._held_handle_ids([arq_uuid]))
        self._assert_handles_free(rp_uuid)

    def _assert_events(self, nova, expected):
        """Nova got one event per ARQ of ``expected``
        {uuid: (server, status)}."""
        self._wait_until(lambda: all(nova.events_of(expected).values()),
                         'events of %s at the Nova stand-in'
                         % sorted(expected))
        wanted = {arq_uuid: [{'name': cases.EVENT_NAME,
                              'server_uuid': server_uuid,
                              'tag': arq_uuid, 'status': status}]
                  for arq_uuid, (server_uuid, status) in expected.items()}
        self.assertEqual(wanted, nova.events_of(expected),
                         '%s\n%s' % (nova.requests, self._logs()))


class TestNovaEventsMySQL(NovaEventsTestsMixin, base.TestCase):
    backend = 'mysql'


class TestNovaEventsPostgreSQL(NovaEventsTestsMixin, base.TestCase):
    backend = 'postgresql'
