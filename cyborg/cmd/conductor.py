"""cyborg-conductor: serves the conductor topic and records heartbeats."""

import sys

from cyborg import conf
from cyborg import policies
from cyborg import service
from cyborg.conductor import manager
from cyborg.conductor import rpcapi
from cyborg.db import api as db_api
from cyborg.db.queries import services as service_queries
from cyborg.conductor import metrics as conductor_metrics


def main():
    """Run the conductor until SIGTERM."""
    service.prepare_service(sys.argv)
    db_api.configure(conf.CONF)
    # The conductor checks rules too (whose ARQs a caller may act on).
    policies.init(conf.CONF)
    conductor = manager.ConductorManager(conf.CONF.host)
    endpoint, exporter = conductor, None
    if conf.CONF.metrics.enabled:
        endpoint = conductor_metrics.counting_endpoints(conductor)
        exporter = conductor_metrics.exporter(
            conf.CONF.metrics.bind_host, conf.CONF.metrics.conductor_port)
    # While the database is out this conductor takes no RPC request: the
    # others, whose database answers, take them.
    rpc_service = service.RPCService(endpoint, rpcapi.TOPIC, conf.CONF.host,
                                     heartbeat=conductor.heartbeat,
                                     database_check=service_queries.check)
    return service.run(rpc_service, manager.BINARY,
                       workers=conf.CONF.conductor.workers, exporter=exporter)
