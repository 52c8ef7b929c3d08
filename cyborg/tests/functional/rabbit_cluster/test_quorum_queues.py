"""Binds and reports through a 3-node RabbitMQ cluster with quorum queues.

The API, two conductors and the agent run as processes on the cluster of
``base.RabbitClusterMixin`` with the production setting (``[oslo_messaging_
rabbit] rabbit_quorum_queue`` and ``rabbit_transient_quorum_queue``). Every
queue their RPC declares (the conductor topic and its per-host queues, the
agent's, the reply and fanout queues) is a quorum queue with a member on
each node; binds over one-handle regions end exact and the agent's reports
are answered.
"""

from cyborg.tests import base
from cyborg.tests.functional.rabbit_cluster import base as cluster_base

DEVICES = 4
PER_DEVICE = 3


class QuorumQueuesTest(cluster_base.RabbitClusterMixin, base.TestCase):

    def test_binds_and_reports_on_quorum_queues(self):
        regions = self.start_binding_services(DEVICES)
        self.conductors.append(self._start_conductor(
            'conductor2-%s' % self.suffix))
        rows = self.bind_burst(regions, PER_DEVICE, clients=4)
        self.assertEqual({202}, {status for status, _ in self.answers},
                         self.answers)
        self.assertEqual([], self.client_errors)
        self.assert_exact(rows, regions)
        self._wait_for_reports(2, 'on the cluster')

        queues = self.queues()
        members = self.node_names()
        conductor = queues[cluster_base.CONDUCTOR_TOPIC]
        self.assertEqual(('quorum', members, members),
                         (conductor['type'], sorted(conductor['members']),
                          sorted(conductor['online'])), queues)
        self.assertIn(conductor['leader'], members)
        # Every queue, replies and fanouts included: none lives on one
        # node only.
        self.assertEqual({'quorum'}, {queue['type']
                                      for queue in queues.values()}, queues)
        self.assertEqual([], [name for name, queue in queues.items()
                              if sorted(queue['members']) != members])
        kinds = {name.split('_')[0] if name.startswith('reply_') else
                 'fanout' if '_fanout_' in name else name
                 for name in queues}
        self.assertIn('reply', kinds)
        self.assertIn('fanout', kinds)
        self.assertIn('cyborg-agent.%s' % self.host, kinds)
        self._assert_clean_stop([self.agent])
        self._assert_clean_stop(self.services[:-1])
