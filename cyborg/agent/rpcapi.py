"""Client of the agents' RPC endpoints: each call goes to one host's agent."""

import oslo_messaging

from cyborg import rpc

TOPIC = 'cyborg-agent'


class AgentAPI:
    """Client for the agent's RPC endpoints.

    1.0 - initial version: ping
    """

    RPC_API_VERSION = '1.0'

    def __init__(self):
        target = oslo_messaging.Target(topic=TOPIC, version='1.0')
        self._client = rpc.get_client(target,
                                      version_cap=self.RPC_API_VERSION)

    def ping(self, context, host):
        """Ask the agent of ``host`` to answer; return its host name."""
        call_context = self._client.prepare(server=host, version='1.0')
        return call_context.call(context, 'ping')
