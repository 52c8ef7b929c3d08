"""Client of the conductor's RPC endpoints (cyborg.conductor.manager)."""

import oslo_messaging

from cyborg import rpc

TOPIC = 'cyborg-conductor'
# program_deployable waits this much longer than the conductor waits for the
# agent, so that the conductor's own timeout error arrives first.
PROGRAM_ANSWER_MARGIN = 10


class ConductorAPI:
    """Client for the conductor's RPC endpoints.

    1.0 - initial version: report_heartbeat, ping
    1.1 - report_inventory, set_device_status, create_attribute,
          delete_attribute
    1.2 - create_device_profiles, delete_device_profiles, create_arqs,
          bind_arqs, unbind_arqs, delete_arqs
    1.3 - program_deployable
    """

    RPC_API_VERSION = '1.3'

    def __init__(self, program_timeout=None, version_cap=None):
        """``program_timeout``: [conductor] program_timeout, for callers of
        ``program_deployable`` (the API); None waits rpc_response_timeout.
        ``version_cap``: [upgrade_levels] conductor (None: this release's).
        """
        self._program_timeout = program_timeout
        target = oslo_messaging.Target(topic=TOPIC, version='1.0')
        self.version_cap = version_cap or self.RPC_API_VERSION
        self._client = rpc.get_client(target, version_cap=self.version_cap)

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

    def create_device_profiles(self, context, profiles):
        """Create every profile of ``profiles`` or none; return DeviceProfiles.

        ``profiles`` is a list of dicts with ``name``, ``groups`` and
        optionally ``description`` and ``uuid``, already validated by the API.

        :raises: cyborg.exception.DuplicateName, Invalid
        """
        call_context = self._client.prepare(version='1.2')
        return call_context.call(context, 'create_device_profiles',
                                 profiles=profiles)

    def delete_device_profiles(self, context, refs):
        """Delete the profiles named by ``refs`` (uuids or names), all or none.

        :raises: cyborg.exception.ResourceNotFound, Conflict
        """
        call_context = self._client.prepare(version='1.2')
        return call_context.call(context, 'delete_device_profiles', refs=refs)

    def create_arqs(self, context, device_profile_name,
                    device_profile_group_id=None):
        """Create the ARQs a device profile asks for, in ``Initial``; return them.

        :raises: cyborg.exception.ResourceNotFound, Invalid
        """
        call_context = self._client.prepare(version='1.2')
        return call_context.call(
            context, 'create_arqs', device_profile_name=device_profile_name,
            device_profile_group_id=device_profile_group_id)

    def bind_arqs(self, context, bindings):
        """Start binding ARQs; return once the work is recorded.

        ``bindings`` maps an ARQ uuid to a dict with ``hostname``,
        ``device_rp_uuid``, ``instance_uuid`` and optionally ``project_id``.
        The binding itself finishes asynchronously.

        :raises: cyborg.exception.ResourceNotFound, Conflict, Invalid
        """
        call_context = self._client.prepare(version='1.2')
        return call_context.call(context, 'bind_arqs', bindings=bindings)

    def unbind_arqs(self, context, arq_uuids):
        """Unbind the ARQs ``arq_uuids``, freeing their attach handles.

        :raises: cyborg.exception.ResourceNotFound, Conflict
        """
        call_context = self._client.prepare(version='1.2')
        return call_context.call(context, 'unbind_arqs', arq_uuids=arq_uuids)

    def delete_arqs(self, context, arq_uuids=None, instance_uuid=None):
        """Delete the ARQs ``arq_uuids`` (all or none) or all of an instance.

        :raises: cyborg.exception.ResourceNotFound
        """
        call_context = self._client.prepare(version='1.2')
        return call_context.call(context, 'delete_arqs', arq_uuids=arq_uuids,
                                 instance_uuid=instance_uuid)

    def program_deployable(self, context, deployable_uuid, image_id,
                           timeout=None):
        """Program Glance image ``image_id`` into a deployable; return it.

        Synchronous: the conductor has the host's agent download the image
        and program it, and answers once the deployable records the image
        as its ``bitstream_id`` (or with the failure). ``timeout`` is how
        long to wait; by default a little longer than the
        ``program_timeout`` this client was made with.

        :raises: cyborg.exception.ResourceNotFound, Invalid, Conflict and
            the exceptions of ``cyborg.conductor.programming``
        """
        if timeout is None and self._program_timeout is not None:
            timeout = self._program_timeout + PROGRAM_ANSWER_MARGIN
        call_context = self._client.prepare(version='1.3', timeout=timeout)
        return call_context.call(context, 'program_deployable',
                                 deployable_uuid=deployable_uuid,
                                 image_id=image_id)
