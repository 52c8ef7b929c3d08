"""cyborg-agent: loads the accelerator drivers and serves this host's topic."""

import logging
import sys

from cyborg import conf
from cyborg import service
from cyborg.agent import manager
from cyborg.agent import rpcapi
from cyborg.agent import metrics as agent_metrics

LOG = logging.getLogger(__name__)


def main():
    """Run the agent until SIGTERM."""
    service.prepare_service(sys.argv)
    try:
        agent = manager.AgentManager(conf.CONF.host)
    except (manager.UnknownDriver, manager.DriverLoadFailed) as error:
        # A configuration mistake: say what is wrong, without a traceback.
        LOG.error('cyborg-agent cannot start: %s', error)
        return 1
    endpoint, exporter = agent, None
    if conf.CONF.metrics.enabled:
        endpoint = agent_metrics.counting_endpoints(agent)
        exporter = agent_metrics.exporter(conf.CONF.metrics.bind_host,
                                          conf.CONF.metrics.agent_port)
    rpc_service = service.RPCService(endpoint, rpcapi.TOPIC, conf.CONF.host,
                                     heartbeat=agent.heartbeat)
    return service.run(rpc_service, manager.BINARY, exporter=exporter)
