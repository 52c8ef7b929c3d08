"""Client of the agents' RPC endpoints: each call goes to one host's agent."""

import oslo_messaging

from cyborg import rpc

TOPIC = 'cyborg-agent'


class AgentAPI:
    """Client for the agent's RPC endpoints.

    1.0 - initial version: ping
    1.1 - prepare_arqs
    1.2 - program
    """

    RPC_API_VERSION = '1.2'

    def __init__(self):
        target = oslo_messaging.Target(topic=TOPIC, version='1.0')
        self._client = rpc.get_client(target,
                                      version_cap=self.RPC_API_VERSION)

    def ping(self, context, host):
        """Ask the agent of ``host`` to answer; return its host name."""
        call_context = self._client.prepare(server=host, version='1.0')
        return call_context.call(context, 'ping')

    def prepare_arqs(self, context, host, arqs, timeout=None):
        """Ask the agent of ``host`` to prepare the attach handles of ``arqs``.

        ``arqs`` is a list of dicts, one per ARQ being bound on ``host``:
        ``uuid``, ``driver_name`` and ``deployable_name`` of the deployable,
        ``attach_type`` and ``attach_info`` (a dict) of the attach handle,
        and ``request_group``, the ARQ's device profile group. Returns
        ``{arq_uuid: {'prepared': bool, 'reason': str or None}}``. The agent
        is told ``timeout`` too, and answers before it with the ARQs still
        being prepared failed.

        :raises: oslo_messaging.MessagingTimeout when the agent does not
            answer within ``timeout`` seconds
        """
        call_context = self._client.prepare(server=host, version='1.1',
                                            timeout=timeout)
        return call_context.call(context, 'prepare_arqs', arqs=arqs,
                                 timeout=timeout)

    def program(self, context, host, driver_name, deployable_name, image_id,
                timeout=None):
        """Ask the agent of ``host`` to program Glance image ``image_id``.

        The agent downloads the image with its own [glance] credentials
        (hash verified, at most [agent] max_bitstream_bytes) and has the
        driver ``driver_name`` program it into the deployable (region) it
        reported as ``deployable_name``. Returns ``{'code': int, 'message':
        str}``, the code a ``ProgramResult`` (seed 001).

        :raises: oslo_messaging.MessagingTimeout when the agent does not
            answer within ``timeout`` seconds
        """
        call_context = self._client.prepare(server=host, version='1.2',
                                            timeout=timeout)
        return call_context.call(context, 'program', driver_name=driver_name,
                                 deployable_name=deployable_name,
                                 image_id=image_id)
