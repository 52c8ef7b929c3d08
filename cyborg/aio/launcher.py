"""The all-in-one assembled: database, Placement, Glance, conductor, agent
and API in one process, started in dependency order and stopped in reverse.

Conductor and agent register their managers for local dispatch, so calls
between the parts of this process run directly instead of through the
transport; their RPC servers still listen for other processes.

With [metrics] enabled (the all-in-one's default), GET /metrics on the
API's port serves the families of all three services of this process
(API, conductor with its fleet figures, agent); the conductor's and the
agent's ports of their own ([metrics] conductor_port, agent_port) are not
opened. The fleet page listens on [api] fleet_page_port as well
(``cyborg.api.fleet.port``).
"""

import logging
import os
import shutil

from cyborg.agent import manager as agent_manager
from cyborg.agent import metrics as agent_metrics
from cyborg.agent import rpcapi as agent_rpcapi
from cyborg.aio import conf as aio_conf
from cyborg.aio import glance as aio_glance
from cyborg.aio import placement as aio_placement
from cyborg.api import app as api_app
from cyborg.api.fleet import port as fleet_port
from cyborg.api import metrics as api_metrics
from cyborg.clients import placement as placement_client
from cyborg.conductor import manager as conductor_manager
from cyborg.conductor import metrics as conductor_metrics
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.db import api as db_api
from cyborg.db import migration
from cyborg import metrics
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
        self.fleet_page_url = None
        self.metrics_url = None
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
            if self.conf.metrics.enabled:
                metrics.enable()
                self._stops.append(metrics.disable)
            self._start_rpc_service(
                conductor_manager.ConductorManager(self.conf.host),
                conductor_rpcapi.TOPIC, conductor_metrics)
            self._start_rpc_service(
                agent_manager.AgentManager(self.conf.host),
                agent_rpcapi.TOPIC, agent_metrics)
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
        self._copy_fleet(state_dir)
        db_api.configure(self.conf)
        migration.upgrade('head')
        LOG.info('Cyborg database at %s is at revision %s',
                 self.conf.database.connection, migration.current_revision())

    def _copy_fleet(self, state_dir):
        """Put the default simulated fleet in the state directory, where
        the agent reads it (``aio_conf.STATE_FLEET``), unless it is there
        already: a user's edits of it are kept across restarts."""
        fleet = os.path.join(state_dir, 'fleet.yaml')
        if (self.conf.agent.fake_inventory == fleet
                and not os.path.exists(fleet)):
            shutil.copyfile(aio_conf.FLEET_PATH, fleet)
            LOG.info('The simulated fleet is %s: edit it while cyborg-aio '
                     'runs, and the next inventory report shows it', fleet)

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

    def _start_rpc_service(self, manager, topic, service_metrics):
        host = self.conf.host
        endpoint = manager
        if self.conf.metrics.enabled:
            # RPC errors counted, local calls included.
            endpoint = service_metrics.counting_endpoints(manager)
        rpc.register_local_endpoint(topic, host, endpoint)
        self._stops.append(
            lambda: rpc.unregister_local_endpoint(topic, host))
        rpc_service = service.RPCService(endpoint, topic, host,
                                         heartbeat=manager.heartbeat)
        rpc_service.start()
        self._stops.append(rpc_service.stop)

    def _start_api(self):
        registry = None
        if self.conf.metrics.enabled:
            registry = metrics.combined_registry([
                api_metrics.scrape_registry(),
                conductor_metrics.scrape_registry(),
                agent_metrics.scrape_registry()])
        application = api_app.setup_app(self.conf, metrics_registry=registry)
        page_server = fleet_port.page_server(self.conf, application)
        if page_server is not None:
            page_server.start()
            self._stops.append(page_server.stop)
            self.fleet_page_url = fleet_port.address(self.conf.api.host_ip,
                                                     page_server.port)
            LOG.info('The fleet page: %s', self.fleet_page_url)
        server = api_app.api_server(self.conf, application)
        server.start()
        self._stops.append(server.stop)
        self.api_url = 'http://%s:%s' % (self.conf.api.host_ip, server.port)
        if registry is not None:
            self.metrics_url = self.api_url + api_metrics.PATH
            LOG.info('cyborg-api, cyborg-conductor and cyborg-agent serve '
                     'Prometheus metrics at %s ([metrics] conductor_port and '
                     'agent_port are not opened by the all-in-one)',
                     self.metrics_url)

    def _ensure_compute_node(self):
        # The compute node's provider is Nova's in a real cloud; here nobody
        # else creates it, and device providers are hung below it.
        client = placement_client.PlacementClient(self.conf)
        self.compute_node_uuid = client.ensure_provider(self.conf.host)
        LOG.info('Compute node %s is resource provider %s in Placement',
                 self.conf.host, self.compute_node_uuid)
