"""Client of the conductor's RPC endpoints (cyborg.conductor.manager)."""

import oslo_messaging

from cyborg import rpc

TOPIC = 'cyborg-conductor'


class ConductorAPI:
    """Client for the conductor's RPC endpoints.

    1.0 - initial version: report_heartbeat, ping
    """

    RPC_API_VERSION = '1.0'

    def __init__(self):
        target = oslo_messaging.Target(topic=TOPIC, version='1.0')
        self._client = rpc.get_client(target,
                                      version_cap=self.RPC_API_VERSION)

    def report_heartbeat(self, context, host, binary, topic, timeout=None):
        """Record a heartbeat of ``binary`` on ``host``; return the Service."""
        call_context = self._client.prepare(version='1.0', timeout=timeout)
        return call_context.call(context, 'report_heartbeat', host=host,
                                 binary=binary, topic=topic)

    def ping(self, context):
        """Ask any conductor to answer; return the answering host's name."""
        call_context = self._client.prepare(version='1.0')
        return call_context.call(context, 'ping')
