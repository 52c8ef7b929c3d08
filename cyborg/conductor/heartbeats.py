"""Recording service heartbeats: the conductor's own and the agents' reports."""

from cyborg import objects


def record(context, host, binary, topic):
    """Count one heartbeat of ``binary`` on ``host``; return the Service."""
    return objects.Service.record_heartbeat(context, host, binary, topic)
