"""The agent call of a bind batch: ``prepare_arqs`` on each host, retried.

``AgentCalls.prepare_hosts`` asks each host's agent to prepare its ARQs,
the hosts at the same time, and asks again (after a backoff when the bus
refused the call) until every ARQ has an answer or its bind time is up;
it returns one ``Decision`` per ARQ. An ARQ carrying a bitstream whose
agent did not answer in time is ``suspect``: its region may hold part of
the image, and the binder marks it degraded.
"""

from concurrent import futures
import dataclasses
import logging
import math
import threading

import oslo_messaging
from oslo_utils import timeutils

from cyborg.agent import rpcapi as agent_rpcapi
from cyborg.conductor import bind_transactions

LOG = logging.getLogger(__name__)

Outcome = bind_transactions.Outcome
# A prepare call the message bus refused is made again after this many
# seconds, doubled at each refusal up to RETRY_DELAY_MAX.
RETRY_DELAY = 0.5
RETRY_DELAY_MAX = 5


class AgentCalls:
    """The prepare calls of one binder, made with the admin ``context``.

    ``agents`` (an AgentAPI) defaults to the real one, made on first use;
    a call that programs nothing waits at most ``call_timeout`` seconds.
    """

    def __init__(self, context, call_timeout, agents=None):
        self._context = context
        self._call_timeout = call_timeout
        self._agents = agents

    @property
    def agents(self):
        if self._agents is None:
            self._agents = agent_rpcapi.AgentAPI()
        return self._agents

    def prepare_hosts(self, by_host, stop=None):
        """The Decisions of the Work of ``by_host``: one agent call per
        host, the hosts asked at the same time.

        Each host has what is left of its own ARQs' bind time: a host that
        is slow to answer does not use up the time of the others. ``stop``
        (an Event) set: the binder is stopping.
        """
        if len(by_host) <= 1:
            return [decision for host, items in by_host.items()
                    for decision in self.prepare(host, items, stop)]
        with futures.ThreadPoolExecutor(
                max_workers=len(by_host),
                thread_name_prefix='arq-prepare') as pool:
            answers = [pool.submit(self.prepare, host, items, stop)
                       for host, items in sorted(by_host.items())]
            return [decision for answer in answers
                    for decision in answer.result()]

    def prepare(self, host, items, stop=None):
        """The Decisions of the ARQs of ``host``, asking its agent until
        each has an answer or their bind time is up.

        One call per attempt, for the ARQs still without an answer. A call
        that went unanswered is made again at once (it waited already), one
        the bus refused after a backoff; a bind whose time ran out meanwhile
        fails, one whose binder is stopping is left to the next binder.
        """
        stop = stop or threading.Event()
        deadline = min(item.deadline for item in items)
        if _seconds_until(deadline) <= 0:
            return _decide(items, Outcome.FAILED, 'bind_timeout passed '
                           'before the agent of %s was asked' % host)
        decisions = []
        delays = _retry_delays()
        waiting = items
        warned = False
        while True:
            attempt = self._ask(host, waiting, _seconds_until(deadline))
            decisions.extend(attempt.decisions)
            waiting = attempt.again
            if not waiting:
                return decisions
            delay = next(delays) if attempt.back_off else 0
            if stop.wait(min(delay, max(0, _seconds_until(deadline)))):
                return decisions + _decide(waiting, Outcome.RETRY,
                                           'the conductor is stopping')
            if _seconds_until(deadline) <= 0:
                return decisions + _timed_out(waiting, attempt)
            # The bus refusing calls is worth one warning per bind.
            log = LOG.warning if attempt.back_off and not warned else LOG.info
            warned = warned or attempt.back_off
            log('Asking the agent of %s again for ARQs %s: %s', host,
                ', '.join(item.uuid for item in waiting), attempt.why)

    def _ask(self, host, items, remaining):
        """One prepare_arqs call for ``items``, with ``remaining`` seconds
        of bind time; an _Attempt."""
        # Programming may take minutes and cannot be told from a lost call:
        # such a call waits for what is left of the bind's time.
        if not any(item.bitstream_id for item in items):
            remaining = min(remaining, self._call_timeout)
        try:
            answers = self.agents.prepare_arqs(
                self._context, host, [item.for_agent() for item in items],
                timeout=max(1, math.ceil(remaining)))
        except oslo_messaging.MessagingException as error:
            return _failed_call(host, items, error)
        # An ARQ the agent was still preparing is asked for again: the
        # agent then waits for that preparation rather than redoing it.
        answers = answers or {}
        pending = {item.uuid for item in items
                   if (answers.get(item.uuid) or {}).get('pending')}
        return _Attempt(
            [item.answered(host, answers) for item in items
             if item.uuid not in pending],
            [item for item in items if item.uuid in pending], False,
            'still being prepared', 'the agent of %s was still preparing '
            'it when bind_timeout passed' % host)


@dataclasses.dataclass
class _Attempt:
    """What one prepare call ended in: its ``decisions``, the items to ask
    ``again`` about (after a backoff if ``back_off``), ``why``, and why
    they fail once the bind time is up (``too_late``)."""

    decisions: list
    again: list = dataclasses.field(default_factory=list)
    back_off: bool = False
    why: str = None
    too_late: str = None


def _failed_call(host, items, error):
    """The _Attempt of a prepare call to ``host`` that raised ``error``."""
    if isinstance(error, oslo_messaging.MessagingTimeout):
        # The agent died or hangs, or the call or its answer was lost in a
        # broker restart.
        return _Attempt(
            [], items, False, 'the agent of %s did not answer' % host,
            'the agent of %s did not answer within bind_timeout' % host)
    if isinstance(error, oslo_messaging.MessageDeliveryFailure):
        # The bus is away, or the agent has not subscribed again since it
        # came back (cyborg.rpc).
        return _Attempt(
            [], items, True, str(error),
            'the agent of %s could not be reached within bind_timeout: %s'
            % (host, error))
    if isinstance(error, (oslo_messaging.RemoteError,
                          oslo_messaging.RPCVersionCapError)):
        return _Attempt(_decide(items, Outcome.FAILED, 'the agent of %s '
                                'refused: %s' % (host, error)))
    if isinstance(error, oslo_messaging.RPCDispatcherError):
        # An agent of an older release (unless [upgrade_levels] agent pins
        # this conductor to its version): trying again is no use.
        return _Attempt(_decide(
            items, Outcome.FAILED, 'the agent of %s is of an older release '
            '([upgrade_levels] agent): %s' % (host, error)))
    # The transport may come back: a sweep tries again.
    LOG.warning('Could not reach the agent of %s for ARQs %s: %s',
                host, ', '.join(item.uuid for item in items), error)
    return _Attempt(_decide(items, Outcome.RETRY, str(error)))


def _seconds_until(deadline):
    return (deadline - timeutils.utcnow()).total_seconds()


def _retry_delays():
    """The backoff between prepare calls the bus refused: RETRY_DELAY,
    doubled each time, at most RETRY_DELAY_MAX."""
    delay = RETRY_DELAY
    while True:
        yield delay
        delay = min(2 * delay, RETRY_DELAY_MAX)


def _timed_out(items, attempt):
    """FAILED Decisions of the ``items`` still without an answer when the
    bind time ran out after ``attempt``; those carrying a bitstream are
    suspect unless the bus refused the calls (the agent never had them)."""
    decisions = _decide(items, Outcome.FAILED, attempt.too_late)
    for item, decision in zip(items, decisions, strict=True):
        decision.suspect = bool(item.bitstream_id) and not attempt.back_off
    return decisions


def _decide(items, outcome, reason=None):
    """The Decisions of ``outcome`` for the Work ``items``."""
    return [item.decided(outcome, reason) for item in items]
