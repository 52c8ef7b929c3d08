"""Client of the conductor's RPC endpoints (cyborg.conductor.manager)."""

import oslo_messaging

from cyborg import rpc

TOPIC = 'cyborg-conductor'
# program_deployable waits this much longer than the conductor waits for the
# agent, so that the conductor's own timeout error arrives first.
PROGRAM_ANSWER_MARGIN = 10
# host_status waits this much longer than it asks the conductor to wait
# for a report: the conductor may sync Placement after it.
HOST_STATUS_ANSWER_MARGIN = 15


class VersionPinned(oslo_messaging.RPCVersionCapError):
    """A call needs a conductor RPC version above the [upgrade_levels]
    conductor pin: some conductors may be of the previous release."""

    def __init__(self, method, version, version_cap):
        super().__init__(version=version, version_cap=version_cap)
        self.method = method
        self.message = (
            '%s needs conductor RPC version %s, but [upgrade_levels] '
            'conductor pins %s: upgrade every cyborg-conductor, then remove '
            'the pin' % (method, version, version_cap))
        self.args = (self.message,)

    def __str__(self):
        return self.message


class ConductorAPI:
    """Client for the conductor's RPC endpoints.

    1.0 - initial version: report_heartbeat, ping
    1.1 - report_inventory, set_device_status, create_attribute,
          delete_attribute
    1.2 - create_device_profiles, delete_device_profiles, create_arqs,
          bind_arqs, unbind_arqs, delete_arqs
    1.3 - program_deployable
    1.4 - plug_instance, unplug_instance, host_status (os-acc)
    1.5 - program_deployable takes row_options and answers what the API
          shows
    1.6 - set_drain (drain or undrain a device or deployable),
          clear_health (an operator's clear of a device's or
          deployable's health),
          prefetch_bitstream (a bitstream into the hosts' caches)
    """

    RPC_API_VERSION = '1.6'
    # The version clear_health needs.
    CLEAR_HEALTH_VERSION = '1.6'
    # The version set_drain needs.
    DRAIN_VERSION = '1.6'
    # The version the calls of os-acc need.
    OS_ACC_VERSION = '1.4'
    # The version prefetch_bitstream needs.
    PREFETCH_VERSION = '1.6'

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
                           row_options=None, timeout=None):
        """Program Glance image ``image_id`` into a deployable; return it.

        Synchronous: the conductor has the host's agent download the image
        and program it, and answers once the deployable records the image
        as its ``bitstream_id`` (or with the failure). ``timeout`` is how
        long to wait; by default a little longer than the
        ``program_timeout`` this client was made with.

        With ``row_options`` the answer is the dict of
        ``cyborg.conductor.programming.answer`` (RPC 1.5); under an
        ``[upgrade_levels]`` pin below 1.5 the call takes its 1.3 form and
        the dict holds the Deployable alone.

        :raises: cyborg.exception.ResourceNotFound, Invalid, Conflict and
            the exceptions of ``cyborg.conductor.programming``
        """
        if timeout is None and self._program_timeout is not None:
            timeout = self._program_timeout + PROGRAM_ANSWER_MARGIN
        if row_options is not None and self._client.can_send_version('1.5'):
            call_context = self._client.prepare(version='1.5',
                                                timeout=timeout)
            return call_context.call(context, 'program_deployable',
                                     deployable_uuid=deployable_uuid,
                                     image_id=image_id,
                                     row_options=row_options)
        call_context = self._client.prepare(version='1.3', timeout=timeout)
        deployable = call_context.call(context, 'program_deployable',
                                       deployable_uuid=deployable_uuid,
                                       image_id=image_id)
        return deployable if row_options is None else {
            'deployable': deployable}

    def clear_health(self, context, kind, uuid):
        """An operator's clear of the health of the device or deployable
        (``kind``: ``device`` or ``deployable``) with ``uuid``: healthy
        again; return whether its health changed
        (``cyborg.conductor.health``).

        :raises: VersionPinned; cyborg.exception.ResourceNotFound, Invalid
        """
        if not self._client.can_send_version(self.CLEAR_HEALTH_VERSION):
            raise VersionPinned('clear_health', self.CLEAR_HEALTH_VERSION,
                                self.version_cap)
        call_context = self._client.prepare(
            version=self.CLEAR_HEALTH_VERSION)
        return call_context.call(context, 'clear_health', kind=kind,
                                 uuid=uuid)

    def set_drain(self, context, kind, uuid, drain, reason=None):
        """Drain (``drain`` True) or undrain the device or deployable
        (``kind``: ``device`` or ``deployable``) with ``uuid``; return
        whether its drain mark changed (``cyborg.conductor.drain``).

        :raises: VersionPinned; cyborg.exception.ResourceNotFound, Invalid
        """
        if not self._client.can_send_version(self.DRAIN_VERSION):
            raise VersionPinned('set_drain', self.DRAIN_VERSION,
                                self.version_cap)
        call_context = self._client.prepare(version=self.DRAIN_VERSION)
        return call_context.call(context, 'set_drain', kind=kind, uuid=uuid,
                                 drain=drain, reason=reason)

    def prefetch_bitstream(self, context, image_id):
        """Have the agents of the hosts with a region Glance image
        ``image_id`` fits put it into their bitstream caches (casts, not
        waited for); return ``{'image_id': ..., 'hosts': [...]}``, the
        hosts asked.

        :raises: VersionPinned; cyborg.exception.ImageNotFound,
            InvalidBitstream, Conflict, GlanceError, GlanceUnavailable
        """
        if not self._client.can_send_version(self.PREFETCH_VERSION):
            raise VersionPinned('prefetch_bitstream', self.PREFETCH_VERSION,
                                self.version_cap)
        call_context = self._client.prepare(version=self.PREFETCH_VERSION)
        return call_context.call(context, 'prefetch_bitstream',
                                 image_id=image_id)

    def _os_acc_call_context(self, method, timeout=None):
        """The call context of an os-acc call, refused under a lower pin.

        :raises: VersionPinned
        """
        if not self._client.can_send_version(self.OS_ACC_VERSION):
            raise VersionPinned(method, self.OS_ACC_VERSION, self.version_cap)
        return self._client.prepare(version='1.4', timeout=timeout)

    def plug_instance(self, context, instance_uuid, hostname, device_rp_uuid,
                      device_profile_name=None, groups=None, timeout=None):
        """Create and bind an instance's ARQs on a provider; return the outcome.

        Synchronous: the conductor binds in the call (``cyborg.conductor.
        os_acc_calls.Plugger.plug`` says what it answers). Exactly one of
        ``device_profile_name`` and ``groups`` (a flavor's accelerator
        groups, for the implicit profile). ``timeout``: how long to wait,
        more than [conductor] bind_timeout.

        :raises: VersionPinned; cyborg.exception.Invalid, ResourceNotFound,
            Conflict
        """
        call_context = self._os_acc_call_context('plug_instance', timeout)
        return call_context.call(
            context, 'plug_instance', instance_uuid=instance_uuid,
            hostname=hostname, device_rp_uuid=device_rp_uuid,
            device_profile_name=device_profile_name, groups=groups)

    def unplug_instance(self, context, instance_uuid, timeout=None):
        """Unbind and delete an instance's ARQs; return how many attach
        handles were released (0 for an unknown instance).

        :raises: VersionPinned; cyborg.exception.Invalid
        """
        call_context = self._os_acc_call_context('unplug_instance', timeout)
        return call_context.call(context, 'unplug_instance',
                                 instance_uuid=instance_uuid)

    def host_status(self, context, host, wait=0, timeout=None):
        """Whether ``host``'s agent is up, has reported and is published to
        Placement (a dict, ``ready`` among its keys); when not, the conductor
        waits up to ``wait`` s for the host's next report first.
        ``timeout``: how long to wait for the answer (default: ``wait`` and
        a margin).

        :raises: VersionPinned; cyborg.exception.Invalid
        """
        if timeout is None:
            timeout = wait + HOST_STATUS_ANSWER_MARGIN
        call_context = self._os_acc_call_context('host_status', timeout)
        return call_context.call(context, 'host_status', host=host, wait=wait)
