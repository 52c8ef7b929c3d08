"""The all-in-one assembled: database, Placement, Glance, conductor, agent
and API in one process, started in dependency order and stopped in reverse.

Conductor and agent register their managers for local dispatch, so calls
between the parts of this process run directly instead of through the
transport; their RPC servers still listen for other processes.
"""

import logging
import os

from cyborg.agent import manager as agent_manager
from cyborg.agent import rpcapi as agent_rpcapi
from cyborg.aio import glance as aio_glance
from cyborg.aio import placement as aio_placement
from cyborg.api import app as api_app
from cyborg.clients import placement as placement_client
from cyborg.conductor import manager as conductor_manager
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.db import api as db_api
from cyborg.db import migration
from cyborg import policies
from cyborg import rpc
from cyborg import service

LOG = logging.getLogger(__name__)


class AllInOne:
    """Every cyborg service of one host, and optionally Placement and
    Glance, in-process."""

    def __init__(self, conf):
        self.conf = conf
        self.api_url = None
        self.placement_url = None
        self.glance_url = None
        self.compute_node_uuid = None
        self._stops = []

    def start(self):
        """Start every part; on failure, stop those already started and raise."""
        try:
            self._start_database()
            self._start_placement()
            self._start_glance()
            # Before any service: once the API answers, the tree is ready.
            self._ensure_compute_node()
            rpc.init(self.conf)
            self._stops.append(rpc.cleanup)
            # The conductor checks rules too, before the API is served.
            policies.init(self.conf)
            self._start_rpc_service(
                conductor_manager.ConductorManager(self.conf.host),
                conductor_rpcapi.TOPIC)
            self._start_rpc_service(
                agent_manager.AgentManager(self.conf.host),
                agent_rpcapi.TOPIC)
            self._start_api()
        except BaseException:
            self.stop()
            raise

    def stop(self):
        """Stop what was started, the last started first."""
        while self._stops:
            stop = self._stops.pop()
            try:
                stop()
            except Exception:
                LOG.exception('Stopping %s failed', stop)

    def _start_database(self):
        state_dir = self.conf.aio.state_dir
        os.makedirs(state_dir, exist_ok=True)
        db_api.configure(self.conf)
        migration.upgrade('head')
        LOG.info('Cyborg database at %s is at revision %s',
                 self.conf.database.connection, migration.current_revision())

    def _start_placement(self):
        if not self.conf.aio.embedded_placement:
            self.placement_url = self.conf.placement.endpoint_override or (
                getattr(self.conf.placement, 'endpoint', None))
            return
        placement = aio_placement.EmbeddedPlacement(
            self.conf.aio.state_dir, host=self.conf.aio.placement_host,
            port=self.conf.aio.placement_port)
        self.placement_url = placement.start()
        self._stops.append(placement.stop)

    def _start_glance(self):
        if not self.conf.aio.embedded_glance:
            self.glance_url = self.conf.glance.endpoint_override
            return
        glance = aio_glance.EmbeddedGlance(
            self.conf.aio.state_dir, host=self.conf.aio.glance_host,
            port=self.conf.aio.glance_port)
        self.glance_url = glance.start()
        self._stops.append(glance.stop)

    def _start_rpc_service(self, manager, topic):
        host = self.conf.host
        rpc.register_local_endpoint(topic, host, manager)
        self._stops.append(
            lambda: rpc.unregister_local_endpoint(topic, host))
        rpc_service = service.RPCService(manager, topic, host,
                                         heartbeat=manager.heartbeat)
        rpc_service.start()
        self._stops.append(rpc_service.stop)

    def _start_api(self):
        server = api_app.api_server(self.conf)
        server.start()
        self._stops.append(server.stop)
        self.api_url = 'http://%s:%s' % (self.conf.api.host_ip, server.port)

    def _ensure_compute_node(self):
        # The compute node's provider is Nova's in a real cloud; here nobody
        # else creates it, and device providers are hung below it.
        client = placement_client.PlacementClient(self.conf)
        self.compute_node_uuid = client.ensure_provider(self.conf.host)
        LOG.info('Compute node %s is resource provider %s in Placement',
                 self.conf.host, self.compute_node_uuid)
