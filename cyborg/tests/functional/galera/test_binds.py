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

from testtools import content

from cyborg.tests import base
from cyborg.tests.functional.galera import binds

DEVICES = 20
PER_DEVICE = 5
MULTI_DEVICES = 30
MULTI_PER_DEVICE = 10


class GaleraBindsTest(binds.BindsMixin, base.TestCase):

    def test_single_writer_binds_are_exact(self):
        regions = self.start_on_node_0(DEVICES)

        rows = self.bind_burst(regions, PER_DEVICE)

        self.assertEqual([], self.client_errors)
        self.assertEqual({202}, {status for status, _ in self.answers})
        self.assert_exact(rows, regions)
        self._assert_clean_stop([self.agent])
        self._assert_clean_stop([self.api, self.conductor])

    def test_multi_writer_binds_are_exact(self):
        regions = self.start_on_node_0(MULTI_DEVICES)
        self.add_writer(1)
        before = self.conflicts()

        rows = self.bind_burst(regions, MULTI_PER_DEVICE)

        conflicts = sum(self.conflicts()) - sum(before)
        retries = self.retries()
        count = len(rows)
        self.addDetail('galera-conflicts', content.text_content(
            '%d conflicts, %d retries for %d binds (%.0f per 1,000), '
            '%.1f s' % (conflicts, retries, count, 1000.0 * retries / count,
                        self.bind_seconds)))
        self.assertEqual([], self.client_errors)
        self.assertEqual({202}, {status for status, _ in self.answers})
        self.assert_exact(rows, regions)
        # Both conductors recorded binds, and they met on the cluster.
        for conductor in self.conductors:
            self.assertIn('Binds recorded', conductor.log())
        self.assertGreater(conflicts, 0, 'no Galera conflict: the test '
                           'proves nothing')
        self.assertGreater(retries, 0, self._logs())
        self._assert_clean_stop([self.agent])
        self._assert_clean_stop(self.services[:-1])
