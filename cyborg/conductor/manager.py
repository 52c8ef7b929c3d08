"""The conductor's RPC endpoints; each hands off to a workflow module."""

import oslo_messaging

from cyborg import conf
from cyborg.conductor import heartbeats
from cyborg.conductor import rpcapi

BINARY = 'cyborg-conductor'


class ConductorManager:
    """Endpoints of the cyborg-conductor topic."""

    target = oslo_messaging.Target(version='1.0')

    def __init__(self, host=None):
        self.host = host or conf.CONF.host

    @oslo_messaging.expose
    def report_heartbeat(self, context, host, binary, topic):
        """Record a heartbeat an agent sent; return the Service."""
        return heartbeats.record(context, host, binary, topic)

    @oslo_messaging.expose
    def ping(self, context):
        """Answer with this conductor's host name."""
        return self.host

    def heartbeat(self, context):
        """Record this conductor's own heartbeat (not an RPC endpoint)."""
        heartbeats.record(context, self.host, BINARY, rpcapi.TOPIC)

