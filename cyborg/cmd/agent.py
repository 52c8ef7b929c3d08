"""cyborg-agent: loads the accelerator drivers and serves this host's topic."""

import sys

from cyborg import conf
from cyborg import service
from cyborg.agent import manager
from cyborg.agent import rpcapi


def main():
    """Run the agent until SIGTERM."""
    service.prepare_service(sys.argv)
    agent = manager.AgentManager(conf.CONF.host)
    rpc_service = service.RPCService(agent, rpcapi.TOPIC, conf.CONF.host,
                                     heartbeat=agent.heartbeat)
    return service.run(rpc_service, manager.BINARY)
