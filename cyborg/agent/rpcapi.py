"""Client of the agents' RPC endpoints: each call goes to one host's agent."""

import oslo_messaging

from cyborg import rpc

TOPIC = 'cyborg-agent'


class AgentAPI:
    """Client for the agent's RPC endpoints.

    1.0 - initial version: ping
    1.1 - prepare_arqs
    1.2 - program
    1.3 - prepare_arqs: an ARQ may name a bitstream_id to load first, and
          its hold; release_arqs
    1.4 - prefetch_bitstream
    """

    RPC_API_VERSION = '1.4'
    # The version that prefetch_bitstream needs.
    PREFETCH_VERSION = '1.4'
    # The version that release_arqs needs.
    RELEASE_VERSION = '1.3'

    def __init__(self, version_cap=None):
        """``version_cap``: [upgrade_levels] agent, the highest version the
        agents understand during a rolling upgrade (None: this release's).
        """
        target = oslo_messaging.Target(topic=TOPIC, version='1.0')
        self.version_cap = version_cap or self.RPC_API_VERSION
        self._client = rpc.get_client(target, version_cap=self.version_cap)

    @property
    def releases(self):
        """Whether the agents read release_arqs (an agent pinned below 1.3
        made nothing at prepare that it would have to give back)."""
        return self._client.can_send_version(self.RELEASE_VERSION)

    def ping(self, context, host):
        """Ask the agent of ``host`` to answer; return its host name."""
        call_context = self._client.prepare(server=host, version='1.0')
        return call_context.call(context, 'ping')

    def prepare_arqs(self, context, host, arqs, timeout=None):
        """Ask the agent of ``host`` to prepare the attach handles of ``arqs``.

        ``arqs`` is a list of dicts, one per ARQ being bound on ``host``:
        ``uuid``, ``driver_name`` and ``deployable_name`` of the deployable,
        ``attach_type`` and ``attach_info`` (a dict) of the attach handle,
        ``request_group``, the ARQ's device profile group, ``hold``
        (``{'arq': uuid, 'taken_at': ISO 8601 text}``: this ARQ's holding
        of the handle, see ``release_arqs``) and ``bitstream_id``, the
        Glance image to load into the deployable first, or None. Returns
        ``{arq_uuid: {'prepared': bool, 'reason': str or None}}``; the
        answer of an ARQ whose bitstream was loaded adds ``readback`` (what
        the region reported holding, as ``program``'s ``loaded``) when
        prepared, and ``suspect: True`` when the load failed or the region
        did not show the image (agents of 1.3 before verified programming
        add neither). The
        agent is told ``timeout`` too, and answers before it with the ARQs
        still being prepared marked ``'pending': True`` (not prepared; ask
        again: a repeated prepare of the same hold is answered from the
        agent's record, never done twice). A call naming a bitstream asks for
        1.3, so that an older agent refuses it rather than bind an
        unprogrammed FPGA.

        :raises: oslo_messaging.MessagingTimeout when the agent does not
            answer within ``timeout`` seconds
        """
        version = '1.3' if any(arq.get('bitstream_id') for arq in arqs) \
            else '1.1'
        call_context = self._client.prepare(server=host, version=version,
                                            timeout=timeout)
        return call_context.call(context, 'prepare_arqs', arqs=arqs,
                                 timeout=timeout)

    def release_arqs(self, context, host, handles, timeout=None):
        """Ask the agent of ``host`` to give back what it prepared for
        ``handles`` (their ARQs were unbound or deleted).

        Each dict of ``handles`` names a handle as ``prepare_arqs`` does
        (``driver_name``, ``deployable_name``, ``attach_type``,
        ``attach_info``), the ``hold`` being released and its
        ``arq_uuid``; the agent ignores a release older than the last
        prepare of that handle. Returns a
        list, in order, of ``{'released': bool, 'stale': bool, 'reason':
        str or None}`` (``stale``: ignored as older).

        :raises: oslo_messaging.MessagingTimeout when the agent does not
            answer within ``timeout`` seconds
        """
        call_context = self._client.prepare(
            server=host, version=self.RELEASE_VERSION, timeout=timeout)
        return call_context.call(context, 'release_arqs', handles=handles,
                                 timeout=timeout)

    @property
    def prefetches(self):
        """Whether the agents read prefetch_bitstream (not under a pin
        below 1.4)."""
        return self._client.can_send_version(self.PREFETCH_VERSION)

    def prefetch_bitstream(self, context, host, image_id):
        """Ask the agent of ``host`` to put Glance image ``image_id`` into
        its bitstream cache (a cast: nothing is answered).

        The agent downloads it with its own [glance] credentials (hash
        verified, at most [agent] max_bitstream_bytes) unless its cache
        holds it already with the image's hash; a failure is logged there.
        """
        cast_context = self._client.prepare(server=host,
                                            version=self.PREFETCH_VERSION)
        cast_context.cast(context, 'prefetch_bitstream', image_id=image_id)

    def program(self, context, host, driver_name, deployable_name, image_id,
                timeout=None):
        """Ask the agent of ``host`` to program Glance image ``image_id``.

        The agent downloads the image with its own [glance] credentials
        (hash verified, at most [agent] max_bitstream_bytes) and has the
        driver ``driver_name`` program it into the deployable (region) it
        reported as ``deployable_name``, then reads the region back.
        Returns ``{'code': int, 'message': str}``, the code a
        ``ProgramResult``, with ``loaded`` (``{'bitstream_id', 'function_id'}``
        the region reported) after a verified success and ``suspect: True``
        when the region's content is in doubt (the driver failed, or the
        region does not show the image); an agent of an older release adds
        neither.

        :raises: oslo_messaging.MessagingTimeout when the agent does not
            answer within ``timeout`` seconds
        """
        call_context = self._client.prepare(server=host, version='1.2',
                                            timeout=timeout)
        return call_context.call(context, 'program', driver_name=driver_name,
                                 deployable_name=deployable_name,
                                 image_id=image_id)
