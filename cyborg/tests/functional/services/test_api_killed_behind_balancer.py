"""An API process killed behind a load balancer (issue 33, point 4).

Two cyborg-api processes share one MariaDB database, a conductor and an
agent; a TCP balancer of the test's (``cyborg.tests.fixtures.balancer``:
round robin, health check on ``/healthcheck``) is in front of them. 200
clients (threads), each through the balancer, create an ARQ, bind it to
a region with fewer attach handles than clients, and read the ARQ list.
Halfway through the requests the second API process is SIGKILLed with
its workers.

What a client may see: only requests that the killed process held when
it died fail, as a connection closed without an answer (or with half of
one); there are at most as many as the balancer's connections open to it
at that moment. The client sends each such request once more and is
answered as usual: a bind repeated is answered 202, or 409 when the
first one was carried out and ended BindFailed before the repeat came
(``conductor.arqs.record_bind``: the same binding on a failed bind is a
409 that names the state). No other request is answered with an error
status, every request sent after the kill is answered by the live
process, and the ARQs end consistent: one Bound per handle, the others
BindFailed for want of one, no handle held twice.
"""

from concurrent import futures
import http.client
import threading
import time
import uuid

import sqlalchemy as sa
from testtools import content

from cyborg.db import models
from cyborg.tests import base
from cyborg.tests.fixtures import balancer as balancer_fixture
from cyborg.tests.functional.services import deployment
from cyborg.tests.functional.services import test_arq_processes as cases

HANDLES = 16
FLEET = {'fpgas': [dict(cases.FPGA_A, regions=[
    {'id': cases.REGION_A_ID, 'pfs': 1, 'vfs_per_pf': HANDLES}]),
    cases.FPGA_B], 'gpus': [cases.T4_GPU]}
CLIENTS = 200
REQUESTS_PER_CLIENT = 3
BIND_TIMEOUT = 120
# Request threads of each API process (16 per CPU by default).
API_THREADS = 16
NO_HANDLE = 'has no free attach handle'
# What a client meets when the process holding its request dies.
LOST = (OSError, http.client.HTTPException)
EXPECTED = {'POST': 201, 'PATCH': 202, 'GET': 200}
# How many times a client sends a request whose connection was lost.
TRIES = 3


class ApiKilledBehindBalancerTest(cases.ArqProcessesMixin, base.TestCase):

    backend = 'mysql'

    def test_only_requests_in_flight_on_the_killed_process_fail(self):
        deployment.DeploymentMixin._start_services(
            self, FLEET, {'conductor': {'bind_timeout': BIND_TIMEOUT,
                                        'bind_sweep_interval': 1}},
            api_options={'api': {'host_ip': '127.0.0.1',
                                 'port': self.api_port,
                                 'api_workers': API_THREADS}})
        deployables = self._wait_until(self._inventory_reported,
                                       'the fleet in the API')
        rp_uuid = deployables[cases.REGION_A]['rp_uuid']
        doomed, doomed_port = self._start_api('api2-%s' % self.suffix)
        for port in (self.api_port, doomed_port):
            self._wait_until(lambda port=port: deployment.api_request(
                port, 'GET', '/healthcheck')[0] == 200,
                'the API process on port %d' % port)
        self.balancer = self.useFixture(balancer_fixture.Balancer(
            [self.api_port, doomed_port]))
        profile = 'lb-%s' % self.suffix
        self._create_profile(profile, cases.region_trait(cases.REGION_A_ID))

        self.done = 0
        self.halfway = threading.Event()
        self.killed_at = None
        self.lock = threading.Lock()
        killer = threading.Thread(target=self._kill_halfway, args=(doomed,))
        killer.start()
        started = time.monotonic()
        with futures.ThreadPoolExecutor(CLIENTS) as pool:
            results = list(pool.map(lambda _: self._client(profile, rp_uuid),
                                    range(CLIENTS)))
        killer.join()
        seconds = time.monotonic() - started
        calls = [call for result in results for call in result[1]]
        lost = [call for call in calls if call['lost'] is not None]
        held = self.balancer.open_between(doomed_port, self.kill_began,
                                          self.killed_at)
        answered = [call for call in calls if call['lost'] is None]
        failed_first = [call for call in answered if call['retry']
                        and call['method'] == 'PATCH'
                        and call['status'] == 409
                        and 'in state BindFailed' in str(call['answer'])]
        self.addDetail('balancer', content.text_content(
            '%d requests in %.1f s; connections taken by the live and the '
            'killed process: %d, %d; %d open on the killed process when it '
            'died; %d tries lost by clients (%s; %d of them repeats), each '
            'sent again: %d binds answered 409 (BindFailed before the '
            'repeat), the others as expected'
            % (len(calls), seconds, self.balancer.served(self.api_port),
               self.balancer.served(doomed_port), held, len(lost),
               ', '.join(sorted({call['lost'] for call in lost})),
               sum(1 for call in lost if call['retry']),
               len(failed_first))))

        # The kill happened in the middle, with requests in flight on it.
        self.assertIsNotNone(self.killed_at, 'the API was never killed')
        self.assertGreater(len(lost), 0, 'nothing in flight on the killed '
                           'process: the test proves nothing')
        # The only requests lost are some the killed process held, each
        # sent before the kill; every other answer is the one expected:
        # no error status.
        self.assertLessEqual(len(lost), held, lost)
        self.assertEqual([], [call for call in lost
                              if call['sent'] > self.killed_at])
        self.assertEqual([], [call for call in answered
                              if call['status'] != EXPECTED[call['method']]
                              and call not in failed_first])
        # The health check took the dead process out; the live one got
        # everything after.
        self.assertEqual([self.api_port], self.balancer.in_service())
        self.assertEqual(0, self.balancer.held(doomed_port))

        self._assert_consistent([result[0] for result in results
                                 if result[0] is not None], rp_uuid)
        self._assert_clean_stop([self.agent])
        self._assert_clean_stop([self.conductor, self.api])

    # -- The clients -----------------------------------------------------

    def _client(self, profile, rp_uuid):
        """Create an ARQ, bind it, read the list; (ARQ uuid, calls)."""
        calls = []
        status, body = self._call(calls, 'POST', '/v2/accelerator_requests',
                                  {'device_profile_name': profile})
        if status != 201:
            return None, calls
        arq = body['arqs'][0]['uuid']
        self._call(calls, 'PATCH', '/v2/accelerator_requests', {
            arq: cases.bind_ops(self.host, rp_uuid, str(uuid.uuid4()))})
        self._call(calls, 'GET', '/v2/accelerator_requests')
        return arq, calls

    def _call(self, calls, method, path, body=None):
        """One request through the balancer, sent again while its
        connection is lost (a try sent as the process dies may be lost
        too); each try kept in ``calls``."""
        for attempt in range(TRIES):
            call = {'method': method, 'sent': time.monotonic(),
                    'lost': None, 'status': None, 'retry': attempt > 0}
            calls.append(call)
            try:
                status, answer = deployment.api_request(
                    self.balancer.port, method, path, body, timeout=60)
            except LOST as error:
                call['lost'] = type(error).__name__
                continue
            finally:
                with self.lock:
                    self.done += 1
                    if self.done == CLIENTS * REQUESTS_PER_CLIENT // 2:
                        self.halfway.set()
            call['status'] = status
            if status != EXPECTED[method]:
                call['answer'] = answer
            return status, answer
        return None, None

    def _kill_halfway(self, doomed):
        self.halfway.wait(BIND_TIMEOUT)
        self.kill_began = time.monotonic()
        doomed.kill()
        # Its exit is expected: the waits watch the other services.
        self.services.remove(doomed)
        self.killed_at = time.monotonic()

    # -- The ARQs --------------------------------------------------------

    def _assert_consistent(self, arqs, rp_uuid):
        """Every bind ended: one ARQ Bound per handle, each to its own;
        the others BindFailed for want of a handle, holding none; a
        handle in use exactly when an ARQ holds it."""
        arq_table = models.ARQ.__table__

        def resolved():
            with self.database.engine.connect() as connection:
                rows = connection.execute(sa.select(
                    arq_table.c.state, arq_table.c.state_reason,
                    arq_table.c.attach_handle_id).where(
                        arq_table.c.uuid.in_(arqs))).all()
            if any(row.state == 'BindStarted' for row in rows):
                return None
            return rows

        rows = self._wait_until(resolved, 'every bind ended',
                                timeout=BIND_TIMEOUT)
        self.assertEqual(len(arqs), len(rows))
        bound = [row.attach_handle_id for row in rows
                 if row.state == 'Bound']
        failed = [row for row in rows if row.state == 'BindFailed']
        self.assertEqual((HANDLES, len(arqs) - HANDLES),
                         (len(bound), len(failed)),
                         sorted({(row.state, row.state_reason)
                                 for row in rows}))
        self.assertEqual(HANDLES, len(set(bound)), 'a handle held twice')
        self.assertEqual([], [row.state_reason for row in failed
                              if NO_HANDLE not in (row.state_reason or '')
                              or row.attach_handle_id is not None])
        in_use = {handle_id for handle_id, _, _, used
                  in self._handles(rp_uuid).values() if used}
        self.assertEqual(set(bound), in_use)
