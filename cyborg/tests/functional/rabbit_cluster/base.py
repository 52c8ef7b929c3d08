"""What the RabbitMQ cluster tests share: one cluster per test class.

``RabbitClusterMixin`` starts a ``cyborg.tests.fixtures.rabbit_cluster.
RabbitCluster`` before the first test of its class and tears it down after
the last (a cluster takes 15-20 s to start on 2 CPUs). Each test gets a
virtual host of its own on it, so that the durable queues another test's
services left do not reach its own, and runs the deployment's processes
(``cyborg.tests.functional.galera.binds.BindBurstMixin``: API, conductor,
agent, on a MariaDB database of its own) with ``transport_url`` naming
the three nodes and ``MESSAGING_OPTIONS``, the production setting of
doc/source/admin/scale-out.rst.
"""

import uuid

from cyborg.tests.fixtures import rabbit_cluster
from cyborg.tests.functional.galera import binds

# [oslo_messaging_rabbit] of every service: the conductor's and agents'
# topic queues, and the reply and fanout queues, are quorum queues,
# replicated on the three nodes.
MESSAGING_OPTIONS = {
    'rabbit_quorum_queue': True,
    'rabbit_transient_quorum_queue': True,
}
CONDUCTOR_TOPIC = 'cyborg-conductor'
# The logger of oslo.messaging's RabbitMQ driver, which logs with its
# traceback a connection that the stopped node closed under it.
RABBIT_DRIVER_LOGGERS = ('oslo.messaging._drivers.impl_rabbit',)


class _Broker:
    """What the deployment reads of ``self.rabbit``."""

    control_exchange = rabbit_cluster.RabbitCluster.control_exchange

    def __init__(self, transport_url):
        self.transport_url = transport_url


class RabbitClusterMixin(binds.BindBurstMixin):

    backend = 'mysql'
    messaging_options = MESSAGING_OPTIONS
    cluster = None

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cluster = rabbit_cluster.RabbitCluster()
        # A skip (or, under CI=true, the error) of a missing
        # rabbitmq-server is raised here, for every test of the class.
        cluster.setUp()
        cls.cluster = cluster

    @classmethod
    def tearDownClass(cls):
        if cls.cluster is not None:
            cls.cluster.cleanUp()
        super().tearDownClass()

    def setUp(self):
        super().setUp()
        self.virtual_host = 'cyborg-test-%s' % uuid.uuid4().hex[:12]
        self.rabbit = _Broker(self.cluster.virtual_host(self.virtual_host))
        self.addCleanup(self.cluster.delete_virtual_host, self.virtual_host)

    def queues(self):
        """The test's queues: {name: {'type', 'leader', 'members',
        'online'}}."""
        return self.cluster.queues(self.virtual_host)

    def node_names(self):
        return sorted(node.node_name for node in self.cluster.nodes)
