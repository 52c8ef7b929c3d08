"""Giving back what agents prepared for attach handles, after an unbind or
a delete has committed (``cyborg.conductor.arqs``).

``Releaser.release`` makes one ``AgentAPI.release_arqs`` call per host,
the hosts at the same time, each bounded by ``timeout``; a host that fails
or does not answer is logged and left. Each release names the hold it ends
(``hold``: the ARQ and when it took the handle), so that the agent ignores
a release older than its last prepare of that handle.
"""

import collections
from concurrent import futures
import json
import logging

import oslo_messaging

LOG = logging.getLogger(__name__)

# How long a release waits for each host (seconds): the API call that
# unbound or deleted the ARQs waits for it.
TIMEOUT = 15


def hold(arq_uuid, taken_at):
    """The hold of ARQ ``arq_uuid`` on the attach handle it took at
    ``taken_at`` (a datetime), as agents are told it; None when the time
    is unknown (the agent then does not order it)."""
    if taken_at is None:
        return None
    return {'arq': arq_uuid, 'taken_at': taken_at.isoformat()}


class Releaser:
    """Asks the agents to release handles; ``agents`` is an AgentAPI."""

    def __init__(self, agents, timeout=TIMEOUT):
        self.agents = agents
        self.timeout = timeout

    def release(self, context, held):
        """Release the handles of ``held`` (``handles_held_by`` rows) on
        their hosts; failures are logged, never raised."""
        by_host = collections.defaultdict(list)
        for row in held:
            by_host[row['hostname']].append(_for_agent(row))
        if not by_host:
            return
        with futures.ThreadPoolExecutor(
                max_workers=len(by_host),
                thread_name_prefix='arq-release') as pool:
            for host, handles in sorted(by_host.items()):
                pool.submit(self._release_on, context, host, handles)

    def _release_on(self, context, host, handles):
        names = ', '.join(_name(handle) for handle in handles)
        if not self.agents.releases:
            # [upgrade_levels] agent pins the agents to a release that made
            # nothing at prepare to give back.
            LOG.debug('Not asking the agent of %s to release %s: agents are '
                      'pinned to RPC %s', host, names,
                      self.agents.version_cap)
            return
        try:
            answers = self.agents.release_arqs(context, host, handles,
                                               timeout=self.timeout)
        except oslo_messaging.MessagingTimeout:
            LOG.warning('The agent of %s did not release the attach handles '
                        'of %s within %s s', host, names, self.timeout)
            return
        except Exception as error:
            LOG.warning('The agent of %s did not release the attach handles '
                        'of %s: %s: %s', host, names, type(error).__name__,
                        error)
            return
        failed = ['%s: %s' % (_name(handle), answer.get('reason'))
                  for handle, answer in zip(handles, answers or [],
                                            strict=False)
                  if not answer.get('released') and not answer.get('stale')]
        if failed or len(answers or []) != len(handles):
            LOG.warning('The agent of %s could not release every attach '
                        'handle: %s', host, '; '.join(failed) or
                        'it answered for %d of %d' % (len(answers or []),
                                                      len(handles)))
        else:
            LOG.info('The agent of %s released the attach handles of %s',
                     host, names)


def _name(handle):
    """A handle of ``_for_agent`` for a message."""
    return '%s of ARQ %s' % (handle['deployable_name'], handle['arq_uuid'])


def _for_agent(row):
    """The dict ``AgentAPI.release_arqs`` takes for one held handle."""
    return {'arq_uuid': row['arq_uuid'],
            'driver_name': row['driver_name'],
            'deployable_name': row['deployable_name'],
            'attach_type': row['attach_type'],
            'attach_info': json.loads(row['attach_info']),
            'hold': hold(row['arq_uuid'], row['taken_at'])}
