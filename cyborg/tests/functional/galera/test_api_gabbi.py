"""The gabbi API files that write, on node 0 of a Galera cluster.

The same YAML files as ``cyborg.tests.functional.api.test_gabbi`` (built
by its ``file_suites``), each on a database of its own that its
APIFixture creates on node 0 of one cluster shared by the module
(``ClusterSuite``); Galera replicates every write to the other two nodes
(certification, total order, DDL of the migrations included). A test
failing here and not on the MariaDB of ``test_gabbi`` is a Galera
finding. Test names start with ``test_api_gabbi.galera.``.

Files: those in ``WRITING``, each of which writes through the API (its
POSTs, PATCHes and DELETEs) or through its fixtures (``deployables`` and
``microversion-2.4`` read an inventory that ``InventoryFixture`` writes).
Left out: the database-free files (``test_gabbi.DATABASE_FREE``) and
``openapi``, whose requests never reach the database.
"""

import sys
import unittest

from testtools import testsuite

from cyborg.tests.fixtures import galera
from cyborg.tests.functional.api import test_gabbi
from cyborg.tests.functional.galera import base as galera_base

WRITING = frozenset({'accelerator-requests', 'attributes', 'deployables',
                     'device-profiles', 'devices', 'microversion-2.4',
                     'strings'})


class ClusterSuite(unittest.TestSuite):
    """Its tests (gabbi files, in order) with one Galera cluster, node 0
    of which is their MariaDB server; started only when a test is left
    to run once the runner has filtered the suite."""

    def run(self, result, debug=False):
        if not self.countTestCases():
            return result
        cluster = galera.GaleraCluster()
        try:
            # A missing galera-4 skips every test (fails them, CI=true).
            cluster.setUp()
        except unittest.SkipTest as skip:
            self._all(result, str(skip))
            return result
        except Exception:
            self._all(result, 'no Galera cluster', sys.exc_info())
            return result
        server = galera_base.NodeAsMySQLServer(cluster, 0)
        try:
            server.setUp()
            return super().run(result, debug)
        finally:
            server.cleanUp()
            cluster.cleanUp()

    def _all(self, result, reason, error=None):
        """Every test skipped for ``reason``; the first one failed with
        ``error`` first, when given, so that the traceback is seen."""
        cases = list(testsuite.iterate_tests(self))
        if error is not None:
            result.addError(cases[0], error)
        for case in cases:
            result.addSkip(case, reason)


def load_tests(loader, tests, pattern):
    """One suite per file of WRITING, inside one ClusterSuite."""
    return ClusterSuite(test_gabbi.file_suites(
        loader, 'mysql', 'migrations', lambda stem: stem in WRITING,
        name='%s.galera' % __name__))
