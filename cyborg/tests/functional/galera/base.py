"""What the Galera tests share: one cluster per test class.

``GaleraMixin`` starts a ``cyborg.tests.fixtures.galera.GaleraCluster``
before the first test of its class and tears it down after the last (a
cluster takes 10-20 s to start on 2 CPUs). Meanwhile
``CYBORG_TEST_MYSQL_URL`` names node 0, so that every test database of
the class (``cyborg.tests.fixtures.database``, ``backend = 'mysql'``) is
created there, and Galera replicates it to the other two nodes
(``NodeAsMySQLServer``, which a suite sharing one cluster uses too).
"""

import contextlib

import fixtures
import sqlalchemy as sa

from cyborg.tests.fixtures import database
from cyborg.tests.fixtures import galera

URL_VARIABLE = database.SERVER_URL_VARIABLES['mysql'][0]


class NodeAsMySQLServer(fixtures.Fixture):
    """``cluster``'s node ``index`` as the MariaDB server of the test
    databases (``backend = 'mysql'``) until cleanUp, which gives back the
    server named before."""

    def __init__(self, cluster, index=0):
        super().__init__()
        self.cluster = cluster
        self.index = index

    def _setUp(self):
        self.useFixture(fixtures.EnvironmentVariable(
            URL_VARIABLE, self.cluster.admin_url(self.index)))
        # Whether the server is reachable is probed once per server.
        database._server_reachable.pop('mysql', None)
        self.addCleanup(database._server_reachable.pop, 'mysql', None)


class GaleraMixin:

    backend = 'mysql'
    cluster = None

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cluster = galera.GaleraCluster()
        # A skip (or, under CI=true, the error) of a missing galera-4 is
        # raised here: it skips (fails) every test of the class.
        cluster.setUp()
        cls.cluster = cluster
        cls._server = NodeAsMySQLServer(cluster, 0)
        cls._server.setUp()

    @classmethod
    def tearDownClass(cls):
        cls._server.cleanUp()
        cls.cluster.cleanUp()
        super().tearDownClass()

    def on_node(self, url, index):
        """``url`` (a test database's, on node 0) on node ``index``."""
        parsed = sa.engine.make_url(url)
        return parsed.set(port=self.cluster.nodes[index].port).render_as_string(
            hide_password=False)

    @contextlib.contextmanager
    def writing_on(self, index):
        """cyborg.db.api's readers and writers on node ``index`` (the test
        database's) inside the block; transactions under way stay where
        they are."""
        engine = database.create_engine(
            self.on_node(self.database.url, index))

        @sa.event.listens_for(engine, 'connect')
        def _causal(dbapi_connection, connection_record):
            # Every statement waits until the node has applied what the
            # cluster committed before it (the test's rows on node 0).
            cursor = dbapi_connection.cursor()
            cursor.execute('SET SESSION wsrep_sync_wait = 15')
            cursor.close()

        reset = database.point_facade_at(engine)
        try:
            yield engine
        finally:
            reset()
            engine.dispose()

    def conflicts(self):
        """Transactions Galera refused at commit or aborted, by node:
        each reached its client as a deadlock error (1213)."""
        counts = []
        for index, node in enumerate(self.cluster.nodes):
            if not node.is_running():
                counts.append(0)
                continue
            status = self.cluster.status(index)
            counts.append(int(status['wsrep_local_cert_failures'])
                          + int(status['wsrep_local_bf_aborts']))
        return counts
