"""Client of the conductor's RPC endpoints (cyborg.conductor.manager)."""

import oslo_messaging

from cyborg import rpc

TOPIC = 'cyborg-conductor'


class ConductorAPI:
    """Client for the conductor's RPC endpoints.

    1.0 - initial version: report_heartbeat, ping
    1.1 - report_inventory, set_device_status, create_attribute,
          delete_attribute
    """

    RPC_API_VERSION = '1.1'

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

    def report_inventory(self, context, host, devices, timeout=None):
        """Replace what the DB and Placement hold for ``host`` with ``devices``.

        ``devices`` is a list of ``drivers.base.device_to_primitive`` dicts:
        the host's full inventory, not a delta.
        """
        call_context = self._client.prepare(version='1.1', timeout=timeout)
        return call_context.call(context, 'report_inventory', host=host,
                                 devices=devices)

    def set_device_status(self, context, device_uuid, status, reason=None):
        """Enable or disable (``maintaining``) a device; return the Device.

        :raises: cyborg.exception.ResourceNotFound, Invalid
        """
        call_context = self._client.prepare(version='1.1')
        return call_context.call(context, 'set_device_status',
                                 device_uuid=device_uuid, status=status,
                                 reason=reason)

    def create_attribute(self, context, values):
        """Add an attribute to a deployable; return the Attribute.

        :raises: cyborg.exception.ResourceNotFound, Invalid
        """
        call_context = self._client.prepare(version='1.1')
        return call_context.call(context, 'create_attribute', values=values)

    def delete_attribute(self, context, attribute_uuid):
        """Delete an attribute.

        :raises: cyborg.exception.ResourceNotFound
        """
        call_context = self._client.prepare(version='1.1')
        return call_context.call(context, 'delete_attribute',
                                 attribute_uuid=attribute_uuid)
