"""Binds on a Galera cluster, with one writer node and with several.

Single writer, as doc/source/admin/scale-out.rst used to require: every
process on node 0; the API's writes (a device profile, ARQs) and binds of
more ARQs than there are handles end exact.

Multi-writer: a second API and conductor process on node 1. The two
conductors claim the same handles at once through two nodes; Galera does
not hold a row lock across nodes, so the losing transaction is refused at
commit (certification failure) or aborted (brute-force abort), which the
client sees as a deadlock (1213). cyborg.db.api's writer runs the whole
transaction again then (oslo.db's retry): the claims end as exact as on
one node. The test counts the conflicts on the servers and the retries in
the conductors' logs, and fails if there were none: without conflicts it
would prove nothing.
"""

import datetime

import sqlalchemy as sa
from testtools import content

from cyborg import context as cyborg_context
from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.db.queries import host_locks
from cyborg.tests import base
from cyborg.tests.functional.galera import binds

HOST_LOCK = models.HostLock.__table__

SINGLE_DEVICES = 20
SINGLE_PER_DEVICE = 5
MULTI_DEVICES = 30
MULTI_PER_DEVICE = 10


class GaleraBindsTest(binds.BindsMixin, base.TestCase):

    def test_single_then_multi_writer_binds_are_exact(self):
        # One test, one deployment: the processes take ~20 s to start.
        regions = self.start_on_node_0(SINGLE_DEVICES + MULTI_DEVICES)
        single, multi = regions[:SINGLE_DEVICES], regions[SINGLE_DEVICES:]

        before = self.conflicts()
        rows = self.bind_burst(single, SINGLE_PER_DEVICE)
        self._measure('single-writer', rows, before, self.retries())
        self.assertEqual([], self.client_errors)
        self.assertEqual({202}, {status for status, _ in self.answers})
        self.assert_exact(rows, single)

        self.add_writer(1)
        before, retries_before = self.conflicts(), self.retries()
        rows = self.bind_burst(multi, MULTI_PER_DEVICE)
        conflicts, retries = self._measure('multi-writer', rows, before,
                                           retries_before)
        self.assertEqual([], self.client_errors)
        self.assertEqual({202}, {status for status, _ in self.answers})
        self.assert_exact(rows, multi)
        # Both conductors recorded binds, and they met on the cluster.
        for conductor in self.conductors:
            self.assertIn('Binds recorded', conductor.log())
        self.assertGreater(conflicts, 0, 'no Galera conflict: the test '
                           'proves nothing')
        self.assertGreater(retries, 0, self._logs())
        self._assert_clean_stop([self.agent])
        self._assert_clean_stop(self.services[:-1])

    def test_conflict_on_another_node_reruns_the_whole_transaction(self):
        # A report's transaction on node 0 (the host's lock, then a row of
        # its own per attempt) meets a write of the same lock row committed
        # on node 1 while it runs: Galera aborts it, the writer runs it
        # again, and only the second attempt's row exists.
        now = datetime.datetime(2026, 1, 1)
        with self.database.engine.begin() as connection:
            connection.execute(sa.insert(HOST_LOCK).values(
                host='compute-a', created_at=now))
        other = sa.create_engine(self.on_node(self.database.url, 1),
                                 poolclass=sa.pool.NullPool)
        self.addCleanup(other.dispose)
        attempts = []
        before = self.conflicts()

        @db_api.writer
        def report(context):
            attempts.append(len(attempts) + 1)
            host_locks.lock_host(context, 'compute-a', now)
            context.session.execute(sa.insert(HOST_LOCK).values(
                host='attempt-%d' % len(attempts), created_at=now))
            if len(attempts) == 1:
                with other.begin() as connection:
                    connection.execute(sa.update(HOST_LOCK).where(
                        HOST_LOCK.c.host == 'compute-a').values(
                            updated_at=now))

        report(cyborg_context.get_admin_context())

        self.assertEqual([1, 2], attempts)
        self.assertGreater(sum(self.conflicts()) - sum(before), 0)
        with other.connect() as connection:
            connection.execute(sa.text('SET SESSION wsrep_sync_wait = 1'))
            hosts = connection.execute(sa.select(HOST_LOCK.c.host).order_by(
                HOST_LOCK.c.host)).scalars().all()
        self.assertEqual(['attempt-2', 'compute-a'], hosts)

    def _measure(self, name, rows, conflicts_before, retries_before):
        """Conflicts and retries since the counts given; kept as a detail."""
        conflicts = sum(self.conflicts()) - sum(conflicts_before)
        retries = self.retries() - retries_before
        self.addDetail(name, content.text_content(
            '%d binds in %.1f s: %d Galera conflicts, %d retries (%.0f per '
            '1,000 binds)' % (len(rows), self.bind_seconds, conflicts,
                              retries, 1000.0 * retries / len(rows))))
        return conflicts, retries
