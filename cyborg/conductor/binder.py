"""The conductor's binder: finishes recorded binds asynchronously.

``arqs.bind`` records the ARQs of a bind request as BindStarted (with host,
resource provider and instance), claims them (below) and hands them to
``Binder.submit``; an ARQ in BindStarted is the durable record of bind
work, and the binder finishes every such ARQ, including those of a
conductor that died.

One bind request (a batch) costs two transactions (the one that records
and claims it, then ``finish``) and one agent call per host, whatever the
number of ARQs (a batch whose profile groups ask for FPGA programming
costs one more transaction, a second ``claim`` after Glance has been asked
which bitstreams it needs: ``cyborg.conductor.bind_programming``):

1. ``bind_transactions.claim``: lease the ARQs to this binder (``arqs.bind``
   leases them as it records them), load them with their deployable (whose
   provider is ``device_rp_uuid``) and device, fail those on an unknown
   provider, another host or a disabled device, and take a free attach
   handle of each deployable (a locking read, then a compare-and-set on
   ``in_use``: two binders never take one handle; the unique
   ``attach_handle_id`` of ARQs is the backstop). ``arqs.bind`` runs it as
   it records the bind (``claim_recorded``), the worker for binds taken over;
2. ``AgentAPI.prepare_arqs`` on each host (``Binder._prepare_hosts``), the
   hosts at the same time, each within what is left of ``[conductor]
   bind_timeout``. A call is bounded by ``prepare_call_timeout`` (one that
   programs an FPGA by the time left): a call lost with the message broker,
   refused while the bus is away, or answered with ARQs still being
   prepared is made again, after a short backoff, until the time is up
   (the agent answers a repeated prepare from what it did already, see
   ``cyborg.agent.preparing``);
3. ``bind_transactions.finish``: move the ARQs still leased to this binder
   with the same handle to Bound or BindFailed (a failed ARQ frees its
   handle; an ARQ unbound or deleted meanwhile is left alone) and, for
   each instance none of whose ARQs is still binding, collect the events
   Nova is owed (none without [nova]: nothing is recorded for them).

The events are sent after the commit, in one request per batch
(``clients/nova.py``). A thread renews the leases of the work under way
every ``bind_sweep_interval``; a sweep at start and as often fails binds
older than ``bind_timeout``, takes over those whose lease ran out (their
conductor died) and sends events still owed.

The binder reads no configuration: the conductor's manager hands in its
``BindSettings`` and the Nova and Glance clients' factories.
"""

import collections
from concurrent import futures
import dataclasses
import datetime
import logging
import math
import os
import queue
import threading
import time
import uuid

import oslo_messaging
from oslo_utils import timeutils

from cyborg import context as cyborg_context
from cyborg.agent import rpcapi as agent_rpcapi
from cyborg.conductor import bind_programming
from cyborg.conductor import bind_transactions as transactions
from cyborg.db.queries import arq_binding as queries
from cyborg.metrics import conductor as conductor_metrics

LOG = logging.getLogger(__name__)

FAILED = transactions.FAILED
PREPARED = transactions.PREPARED
RETRY = transactions.RETRY

# A lease lasts this many sweep intervals; each sweep renews it.
LEASE_INTERVALS = 3
# How long stopping waits for the binds under way.
STOP_TIMEOUT = 10
# At most this many orphaned ARQs are claimed as one batch.
SWEEP_BATCH = 100
# A claim that loses a race for attach handles is tried this many times.
CLAIM_ATTEMPTS = 3
# A prepare call the message bus refused is made again after this many
# seconds, doubled at each refusal up to RETRY_DELAY_MAX.
RETRY_DELAY = 0.5
RETRY_DELAY_MAX = 5


@dataclasses.dataclass(frozen=True)
class BindSettings:
    """The binder's settings: ``workers`` threads, ``bind_timeout`` and
    ``sweep_interval`` in seconds (the [conductor] options)."""

    workers: int
    bind_timeout: float
    sweep_interval: float
    # Seconds one prepare call that programs nothing may take (the
    # option's default).
    prepare_call_timeout: float = 30

    @classmethod
    def from_conf(cls, conf):
        """The settings of the [conductor] group of ``conf``."""
        return cls(workers=conf.conductor.bind_workers,
                   bind_timeout=conf.conductor.bind_timeout,
                   sweep_interval=conf.conductor.bind_sweep_interval,
                   prepare_call_timeout=conf.conductor.prepare_call_timeout)

    @property
    def bind_time_limit(self):
        """How long a bind may take from when it was recorded (timedelta)."""
        return datetime.timedelta(seconds=self.bind_timeout)

    @property
    def lease(self):
        """How long a lease lasts (timedelta): several sweeps' time."""
        return datetime.timedelta(seconds=LEASE_INTERVALS * self.sweep_interval)


class Binder:
    """Finishes ARQs in BindStarted with a pool of threads; see the module docstring.

    ``settings`` is a BindSettings. ``nova``, a callable returning the
    NovaClient, is called once, when the first events are sent (the client
    logs in only in the process that sends them). ``glance``, a callable
    returning a GlanceClient with the conductor's own credentials, is called
    for each batch asking for programming (without it such ARQs fail).
    ``agents`` (an AgentAPI) defaults to the real one, made on first use.
    """

    def __init__(self, host, settings, nova, agents=None, glance=None):
        self.host = host
        self.settings = settings
        self.owner = self._new_owner()
        self._agents = agents
        self._glance_factory = glance
        self._nova_factory = nova
        self._nova = None
        self._nova_lock = threading.Lock()
        self._queue = queue.Queue()
        self._workers = []
        self._sweeper = None
        self._renewer = None
        self._stop = threading.Event()
        # Uuids queued or being bound here: their leases are renewed.
        self._active = collections.Counter()
        self._active_lock = threading.Lock()
        self._context = cyborg_context.get_admin_context()

    def _new_owner(self):
        # Unique per binder and process: a restarted conductor does not
        # take the leases of its previous life for its own work.
        self._pid = os.getpid()
        return '%s/%d/%s' % (self.host, self._pid, uuid.uuid4().hex[:12])

    @property
    def agents(self):
        if self._agents is None:
            self._agents = agent_rpcapi.AgentAPI()
        return self._agents

    @property
    def nova(self):
        with self._nova_lock:
            if self._nova is None:
                self._nova = self._nova_factory()
            return self._nova

    def start(self):
        """Start the worker threads and resume recorded binds."""
        if self._workers:
            return
        if self._pid != os.getpid():
            # Made before the service forked its workers: each process
            # needs an identity of its own.
            self.owner = self._new_owner()
        # Per start: threads of an earlier start never see a new event.
        self._stop = threading.Event()
        for number in range(self.settings.workers):
            worker = threading.Thread(
                target=self._work, args=(self._stop,), daemon=True,
                name='arq-binder-%d' % number)
            worker.start()
            self._workers.append(worker)
        self._sweeper = threading.Thread(
            target=self._sweep_periodically, args=(self._stop,), daemon=True,
            name='arq-bind-sweep')
        self._sweeper.start()
        self._renewer = threading.Thread(
            target=self._renew_periodically, args=(self._stop,), daemon=True,
            name='arq-lease-renewer')
        self._renewer.start()

    def stop(self):
        """Stop the worker threads; unfinished binds stay recorded."""
        if not self._workers:
            return
        self._stop.set()
        # Batches still queued stay active until the leases are given back
        # below: those claimed as they were recorded are leased here.
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        for _ in self._workers:
            self._queue.put(None)
        deadline = time.monotonic() + STOP_TIMEOUT
        for thread in self._workers + [self._sweeper, self._renewer]:
            thread.join(max(0, deadline - time.monotonic()))
            if thread.is_alive():
                LOG.warning('%s is still waiting for an agent; stopping '
                            'without it', thread.name)
        self._workers = []
        self._sweeper = None
        self._renewer = None
        self._release_leases()
        with self._active_lock:
            self._active.clear()

    def _release_leases(self):
        """Give up the leases of the work left, at stop: another binder (or
        this one restarted) takes it over at once."""
        with self._active_lock:
            left = sorted(self._active)
        try:
            queries.release_leases(self._context, left, self.owner)
        except Exception:
            LOG.exception('Could not release the leases of ARQs %s; they '
                          'are taken over when the leases run out', left)

    def lease(self, now):  # (owner, expires_at) of a bind recorded at now
        return self.owner, now + self.settings.lease

    def claim_recorded(self, context, arq_uuids, now):
        """``claim`` ARQs the caller's transaction has just recorded as
        BindStarted at ``now`` and leased (``arqs.bind``), in that
        transaction; the Claimed is for ``submit``, after the commit.
        AttachHandleRace rolls the caller's transaction back."""
        return transactions.claim(
            context, arq_uuids, self.owner, now,
            self.settings.bind_time_limit, self.settings.lease, leased=True)

    def submit(self, arq_uuids, claimed=None):
        """Queue ARQs already recorded as BindStarted, with their committed
        ``claim_recorded`` if they were claimed so."""
        batch = sorted(set(arq_uuids))
        if not batch:
            return
        with self._active_lock:
            self._active.update(batch)
        self._queue.put((batch, claimed))

    def _forget(self, batch):
        with self._active_lock:
            self._active.subtract(batch)
            for arq_uuid in batch:
                if self._active[arq_uuid] <= 0:
                    del self._active[arq_uuid]

    def _work(self, stop):
        while True:
            queued = self._queue.get()
            if queued is None:
                return
            batch, claimed = queued
            try:
                if not stop.is_set():
                    self.bind(batch, claimed)
            except Exception:
                # The ARQs stay in BindStarted: a sweep takes them over.
                LOG.exception('Binding ARQs %s failed', ', '.join(batch))
            finally:
                self._forget(batch)

    # -- One batch --------------------------------------------------------

    def bind(self, arq_uuids, claimed=None):
        """Bind the ARQs of ``arq_uuids`` (``claimed`` already) now, here.

        Returns ``{arq_uuid: state}`` of the ARQs this call moved out of
        BindStarted.
        """
        started = time.monotonic()
        if claimed is None:
            claimed = self._claim(arq_uuids)
        claimed_at = time.monotonic()
        work, decisions = claimed.work, claimed.decisions
        locked = {}
        if claimed.pending:
            programmed = self._claim_programmed(claimed)
            work = work + programmed.work
            decisions = decisions + programmed.decisions
            locked = programmed.programming.images
        by_host = collections.defaultdict(list)
        for item in work:
            by_host[item.hostname].append(item)
        try:
            decisions.extend(self._prepare_hosts(by_host))
        except Exception:
            # Programming, if any, may have begun: what the regions hold
            # is unknown, and their locks are given back.
            transactions.finish(self._context, [], self.owner,
                                timeutils.utcnow(), self.settings.lease,
                                programmed=dict.fromkeys(locked))
            raise
        prepared_at = time.monotonic()
        prepared = {decision.uuid for decision in decisions
                    if decision.outcome == PREPARED}
        ended, events = transactions.finish(
            self._context, decisions, self.owner, timeutils.utcnow(),
            self.settings.lease, events_owed=self.nova.is_configured(),
            programmed=bind_programming.outcomes(work, prepared))
        finished_at = time.monotonic()
        conductor_metrics.observe_binds(decisions, ended, timeutils.utcnow())
        self._notify(events)
        LOG.debug('Bind of ARQs %s: claim %.1f ms, agents %.1f ms, finish '
                  '%.1f ms, Nova events %.1f ms', ', '.join(arq_uuids),
                  (claimed_at - started) * 1000,
                  (prepared_at - claimed_at) * 1000,
                  (finished_at - prepared_at) * 1000,
                  (time.monotonic() - finished_at) * 1000)
        return ended

    def _claim_programmed(self, claimed):
        """Ask Glance what the ARQs ``claimed`` set aside need, and claim
        them again with the answers."""
        glance = self._glance_factory() if self._glance_factory else None
        targets = bind_programming.resolve(glance, claimed.pending)
        batch = {item.arq_id for item in claimed.work}
        batch.update(decision.arq_id for decision in claimed.decisions)
        batch.update(item.arq_id for item in claimed.pending)
        return self._claim([item.arq_uuid for item in claimed.pending],
                           bind_programming.Resolved(targets,
                                                     frozenset(batch)))

    def _claim(self, arq_uuids, resolved=None):
        """``claim``, tried again when another binder took the handles."""
        for attempt in range(1, CLAIM_ATTEMPTS + 1):
            try:
                return transactions.claim(
                    self._context, arq_uuids, self.owner, timeutils.utcnow(),
                    self.settings.bind_time_limit, self.settings.lease,
                    resolved=resolved)
            except transactions.AttachHandleRace:
                if attempt == CLAIM_ATTEMPTS:
                    raise
                LOG.debug('Attach handles of ARQs %s were taken meanwhile; '
                          'claiming again', arq_uuids)

    def _prepare_hosts(self, by_host):
        """One agent call per host, the hosts asked at the same time.

        Each host has what is left of its own ARQs' bind time: a host that
        is slow to answer does not use up the time of the others.
        """
        if len(by_host) <= 1:
            return [decision for host, items in by_host.items()
                    for decision in self._prepare(host, items)]
        with futures.ThreadPoolExecutor(
                max_workers=len(by_host),
                thread_name_prefix='arq-prepare') as pool:
            answers = [pool.submit(self._prepare, host, items)
                       for host, items in sorted(by_host.items())]
            return [decision for answer in answers
                    for decision in answer.result()]

    def _prepare(self, host, items):
        """The Decisions of the ARQs of ``host``, asking its agent until
        each has an answer or their bind time is up.

        One call per attempt, for the ARQs still without an answer. A call
        that went unanswered is made again at once (it waited already), one
        the bus refused after a backoff; a bind whose time ran out meanwhile
        fails, one whose binder is stopping is left to the next binder.
        """
        deadline = min(item.deadline for item in items)
        if _seconds_until(deadline) <= 0:
            return _decide(items, FAILED, 'bind_timeout passed before the '
                           'agent of %s was asked' % host)
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
            if self._stop.wait(min(delay, max(0, _seconds_until(deadline)))):
                return decisions + _decide(waiting, RETRY,
                                           'the conductor is stopping')
            if _seconds_until(deadline) <= 0:
                return decisions + _decide(waiting, FAILED, attempt.too_late)
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
            remaining = min(remaining, self.settings.prepare_call_timeout)
        try:
            answers = self.agents.prepare_arqs(
                self._context, host, [item.for_agent() for item in items],
                timeout=max(1, math.ceil(remaining)))
        except oslo_messaging.MessagingTimeout:
            # The agent died or hangs, or the call or its answer was lost
            # in a broker restart.
            return _Attempt(
                [], items, False, 'the agent of %s did not answer' % host,
                'the agent of %s did not answer within bind_timeout' % host)
        except oslo_messaging.MessageDeliveryFailure as error:
            # The bus is away, or the agent has not subscribed again since
            # it came back (cyborg.rpc).
            return _Attempt(
                [], items, True, str(error),
                'the agent of %s could not be reached within bind_timeout: '
                '%s' % (host, error))
        except (oslo_messaging.RemoteError,
                oslo_messaging.RPCVersionCapError) as error:
            return _Attempt(_decide(items, FAILED, 'the agent of %s refused: '
                                    '%s' % (host, error)))
        except oslo_messaging.RPCDispatcherError as error:
            # An agent of an older release (unless [upgrade_levels] agent
            # pins this conductor to its version): trying again is no use.
            return _Attempt(_decide(
                items, FAILED, 'the agent of %s is of an older release '
                '([upgrade_levels] agent): %s' % (host, error)))
        except oslo_messaging.MessagingException as error:
            # The transport may come back: a sweep tries again.
            LOG.warning('Could not reach the agent of %s for ARQs %s: %s',
                        host, ', '.join(item.uuid for item in items), error)
            return _Attempt(_decide(items, RETRY, str(error)))
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

    def _notify(self, events):
        """Send Nova ``events`` (``finish``'s); once it has them, they are
        no longer owed.

        Events Nova could not be given (unreachable, a server error) stay
        pending and the next sweep sends them again, so Nova may hear of
        an ARQ twice but never not at all. Without [nova] they are dropped.
        Only the lease these events were sent under is cleared: an ARQ
        unbound, bound again and ended meanwhile owes Nova its new event.
        """
        if not events:
            return
        tags = [event['tag'] for event in events]
        try:
            delivered = (self.nova.send_events(events)
                         or not self.nova.is_configured())
        except Exception:
            LOG.exception('Sending Nova the events of ARQs %s failed',
                          ', '.join(tags))
            return
        if delivered and events.recorded:
            queries.clear_events_pending(self._context, events.recorded,
                                         events.owner, events.lease_expires_at)

    # -- The sweep --------------------------------------------------------

    def _renew_periodically(self, stop):
        # Apart from the sweep, which may wait for Nova or the database
        # longer than a lease lasts: the leases of work under way must not
        # run out while this binder is alive.
        while not stop.wait(self.settings.sweep_interval):
            try:
                self.renew_leases()
            except Exception:
                LOG.exception('Renewing the leases of the binds under way '
                              'failed; trying again in %s s',
                              self.settings.sweep_interval)

    def renew_leases(self, now=None):
        """Extend the leases of the ARQs queued or being bound here."""
        now = now or timeutils.utcnow()
        with self._active_lock:
            active = sorted(self._active)
        return queries.renew_leases(self._context, active, self.owner,
                                    now + self.settings.lease)

    def _sweep_periodically(self, stop):
        first = True
        while not stop.is_set():
            try:
                self.sweep(initial=first)
            except Exception:
                LOG.exception('Sweep of the recorded binds failed; trying '
                              'again in %s s', self.settings.sweep_interval)
            first = False
            stop.wait(self.settings.sweep_interval)

    def sweep(self, initial=False):
        """Renew, time out, take over and notify; see the module docstring.

        ``initial`` (at start) takes over every ARQ that nobody leased,
        however young. Returns the uuids queued for taking over.
        """
        now = timeutils.utcnow()
        with self._active_lock:
            active = set(self._active)
        self.renew_leases(now)

        expired = queries.binds_started_before(
            self._context, now - self.settings.bind_time_limit)
        if expired:
            self.fail_expired(expired)
        expired = {row['uuid'] for row in expired}

        unowned_since = now if initial else now - datetime.timedelta(
            seconds=self.settings.sweep_interval)
        orphans = self._take_over(now, unowned_since, active | expired)

        owed = queries.instances_owed_events(self._context, now)
        if owed:
            _, events = transactions.finish(
                self._context, [], self.owner, now, self.settings.lease,
                instance_uuids=owed, events_owed=self.nova.is_configured())
            self._notify(events)
        return orphans

    def _take_over(self, now, unowned_since, skipped):
        """Queue the orphaned binds (no live lease, unowned since
        ``unowned_since``) but those of ``skipped``; return their uuids."""
        # One batch per instance, as its bind request was: a device that
        # hangs then holds up only the ARQs of its own instance.
        by_instance = collections.defaultdict(list)
        orphans = []
        for arq_uuid, instance_uuid in queries.orphaned_binds(
                self._context, now, unowned_since):
            if arq_uuid not in skipped:
                by_instance[instance_uuid].append(arq_uuid)
                orphans.append(arq_uuid)
        for instance_uuid, arq_uuids in by_instance.items():
            for start in range(0, len(arq_uuids), SWEEP_BATCH):
                batch = arq_uuids[start:start + SWEEP_BATCH]
                LOG.info('Taking over the binds of ARQs %s of instance %s',
                         ', '.join(batch), instance_uuid)
                self.submit(batch)
        return orphans

    def fail_expired(self, rows):
        """Set ARQs (``binds_started_before`` rows) still in BindStarted to
        BindFailed, whoever works on them."""
        reason = ('not bound within bind_timeout (%s s)'
                  % self.settings.bind_timeout)
        decisions = [transactions.failed(row, reason) for row in rows]
        _, events = transactions.finish(
            self._context, decisions, None, timeutils.utcnow(),
            self.settings.lease, events_owed=self.nova.is_configured())
        self._notify(events)


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


def _seconds_until(deadline):
    return (deadline - timeutils.utcnow()).total_seconds()


def _retry_delays():
    """The backoff between prepare calls the bus refused: RETRY_DELAY,
    doubled each time, at most RETRY_DELAY_MAX."""
    delay = RETRY_DELAY
    while True:
        yield delay
        delay = min(2 * delay, RETRY_DELAY_MAX)


def _decide(items, outcome, reason=None):
    """The Decisions of ``outcome`` for the Work ``items``."""
    return [item.decided(outcome, reason) for item in items]
