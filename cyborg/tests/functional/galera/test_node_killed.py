"""A Galera node SIGKILLed in the middle of binds, and its return.

API and conductor processes on nodes 0 and 1 bind 200 ARQs over 20
one-handle regions; halfway through the PATCHes node 2 is killed. The
cluster goes on with two of three members (a quorum): every bind is
answered 202 and ends Bound or BindFailed, exactly one per handle, within
the bind timeout. Then node 2 is started again on its data: it rejoins by
state transfer (IST or SST), is Synced, and holds every ARQ as the others
do.
"""

import time

import sqlalchemy as sa
from testtools import content

from cyborg.tests import base
from cyborg.tests.functional.galera import binds

DEVICES = 20
PER_DEVICE = 10
KILLED = 2


class GaleraNodeKilledTest(binds.BindsMixin, base.TestCase):

    def test_binds_survive_a_killed_node_which_rejoins(self):
        regions = self.start_on_node_0(DEVICES)
        self.add_writer(1)
        killed = []

        def kill():
            self.cluster.kill(KILLED)
            killed.append(time.monotonic())

        rows = self.bind_burst(regions, PER_DEVICE, during=kill)

        self.assertEqual(1, len(killed))
        self.assertLess(self.bind_seconds, binds.BIND_TIMEOUT)
        self.assertEqual([], self.client_errors)
        self.assertEqual({202}, {status for status, _ in self.answers})
        self.assert_exact(rows, regions)
        # The other two saw the member go and stayed the primary component.
        self._wait_until(lambda: [
            (status['wsrep_cluster_size'], status['wsrep_cluster_status'])
            for status in map(self.cluster.status, (0, 1))
        ] == [('2', 'Primary')] * 2, 'nodes 0 and 1 in a cluster of two',
            timeout=30)

        started = time.monotonic()
        self.cluster.start(KILLED)
        self.cluster.wait_until_whole()
        self.addDetail('rejoin', content.text_content(
            'node %d Synced again %.1f s after its start' % (
                KILLED, time.monotonic() - started)))
        self.assertEqual(sorted((row.uuid, row.state) for row in rows),
                         self._arqs_on(KILLED))
        self._assert_clean_stop([self.agent])
        self._assert_clean_stop(self.services[:-1])

    def _arqs_on(self, index):
        engine = sa.create_engine(self.on_node(self.database.url, index),
                                  poolclass=sa.pool.NullPool)
        self.addCleanup(engine.dispose)
        with engine.connect() as connection:
            # Wait until the node applied what the cluster committed.
            connection.execute(sa.text('SET SESSION wsrep_sync_wait = 1'))
            return sorted(tuple(row) for row in connection.execute(
                sa.select(binds.ARQ.c.uuid, binds.ARQ.c.state)).all())
