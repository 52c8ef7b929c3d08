"""The RabbitMQ node leading the conductor's queue stopped mid-binds.

The API, two conductors and the agent run as processes on the cluster of
``base.RabbitClusterMixin`` with the production setting (quorum queues,
transient ones included). Five clients bind 100 ARQs over 20 one-handle
regions; once half the PATCHes are sent, the node that leads the
``cyborg-conductor`` quorum queue (every service is connected to it too:
it comes first in their ``transport_url``) is stopped as an operator
would. The other two elect a new leader and the services reconnect to
them: every ARQ ends Bound or BindFailed, exactly one per handle, every
PATCH is answered 202 (none 5xx, so none says "unknown" for a bind that
was carried out), the agent's heartbeats and reports go on, and the node
started again rejoins the cluster and the queue's members.
"""

import threading
import time

from testtools import content

from cyborg.tests import base
from cyborg.tests.fixtures import processes
from cyborg.tests.functional.rabbit_cluster import base as cluster_base

DEVICES = 20
PER_DEVICE = 5
CLIENTS = 5
# Election of a new leader takes seconds (Raft, on 2 CPUs under load).
TAKEOVER_TIMEOUT = 30
# What the API logs of a bind whose conductor call went unanswered.
LOST_ANSWER = 'recorded although its answer was lost'
SENT_AGAIN = 'not answered and not recorded; sending it again'


class LeaderStoppedTest(cluster_base.RabbitClusterMixin, base.TestCase):

    def setUp(self):
        super().setUp()
        self.timings = []

    def _request(self, index, method, path, body):
        """The burst's requests, with (method, started, seconds, status)."""
        started = time.monotonic()
        try:
            answer = super()._request(index, method, path, body)
        except OSError:
            self.timings.append((method, started,
                                 time.monotonic() - started, None))
            raise
        self.timings.append((method, started, time.monotonic() - started,
                             answer[0]))
        return answer

    def _agent_heartbeats(self):
        service = self._heartbeat_of(self.host, 'cyborg-agent')
        return service.report_count if service is not None else 0

    def _leader(self):
        return self.queues()[cluster_base.CONDUCTOR_TOPIC]['leader']

    def test_binds_and_reports_survive_the_leader_stopped(self):
        regions = self.start_binding_services(DEVICES)
        self.conductors.append(self._start_conductor(
            'conductor2-%s' % self.suffix))
        leader = self._leader()
        stopped = self.cluster.index_of(leader)
        events = {}
        lock = threading.Lock()

        def stop_leader():
            with lock:
                if 'stopped' in events:
                    return
                events['connections'] = self.cluster.connections()
                events['stopped'] = time.monotonic()
                self.cluster.stop(stopped)
                events['stop_returned'] = time.monotonic()
            threading.Thread(target=watch_election, daemon=True).start()

        def watch_election():
            deadline = time.monotonic() + TAKEOVER_TIMEOUT
            while time.monotonic() < deadline:
                try:
                    new_leader = self._leader()
                except (AssertionError, KeyError):
                    new_leader = None
                if new_leader not in (None, '', leader):
                    events['elected'] = (new_leader, time.monotonic())
                    return
                time.sleep(0.2)

        rows = self.bind_burst(regions, PER_DEVICE, clients=CLIENTS,
                               during=stop_leader)
        burst_ended = time.monotonic()

        # Every bind was answered 202: none 5xx, none refused.
        self.assertIn('stopped', events)
        self.assertEqual([], self.client_errors)
        failed_answers = [answer for answer in self.answers
                          if answer[0] != 202]
        self.assertEqual({202}, {status for status, _ in self.answers},
                         '%s\n%s' % (failed_answers, self._logs()))
        self.assert_exact(rows, regions)

        # A new leader took the conductor's queue, on another node.
        processes.wait_until(lambda: 'elected' in events,
                             'a new leader of %s' %
                             cluster_base.CONDUCTOR_TOPIC, [],
                             timeout=TAKEOVER_TIMEOUT)
        new_leader, elected_at = events['elected']
        self.assertNotEqual(leader, new_leader)

        # The agent's heartbeats and reports go on through the others.
        heartbeats = self._agent_heartbeats()
        self._wait_until(lambda: self._agent_heartbeats() >= heartbeats + 2,
                         'agent heartbeats after the stop')
        self._wait_for_reports(2, 'after the stop')

        # The node started again rejoins: a member of the cluster and,
        # caught up, of the conductor's queue.
        rejoined_after = self.cluster.start(stopped)
        members = self.node_names()
        self._wait_until(
            lambda: sorted(self.queues()[cluster_base.CONDUCTOR_TOPIC][
                'online']) == members,
            'node %d online in the conductor queue again' % stopped)

        patches = [(started, seconds, status)
                   for method, started, seconds, status in self.timings
                   if method == 'PATCH']
        after_stop = [seconds for started, seconds, _ in patches
                      if started + seconds >= events['stopped']]
        self.addDetail('leader-stopped', content.text_content(
            'leader %s stopped (SIGTERM took %.1f s), holding %d of the %d '
            'client connections; new leader %s %.1f s '
            'after the stop; PATCHes: %d, 5xx: %d, slowest %.1f s, slowest '
            'of those answered after the stop %.1f s; binds ended %.1f s '
            'after the stop; node back in the cluster %.1f s after its '
            'start; binds whose answer the API lost but found recorded: %d, '
            'sent again: %d' % (
                leader, events['stop_returned'] - events['stopped'],
                events['connections'][leader],
                sum(events['connections'].values()),
                new_leader, elected_at - events['stopped'], len(patches),
                len([status for _, _, status in patches
                     if status is None or status >= 500]),
                max(seconds for _, seconds, _ in patches),
                max(after_stop or [0]), burst_ended - events['stopped'],
                rejoined_after, self.api.log().count(LOST_ANSWER),
                self.api.log().count(SENT_AGAIN))))
        self._assert_clean_stop([self.agent],
                                cluster_base.RABBIT_DRIVER_LOGGERS)
        self._assert_clean_stop(self.services[:-1],
                                cluster_base.RABBIT_DRIVER_LOGGERS)
