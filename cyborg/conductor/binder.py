"""The conductor's binder: runs the recorded binds to their end.

``Binder`` queues the binds handed to it, and a pool of threads runs each
batch: claim, programming, the agent call, the writer of its outcomes and
the Nova events. It renews the leases of the work under way in one thread
per conductor and sweeps in another (``cyborg.conductor.bind_sweep``).
"""

import collections
import dataclasses
import datetime
import functools
import logging
import os
import queue
import threading
import time
import uuid

from oslo_utils import timeutils

from cyborg import context as cyborg_context
from cyborg import exception
from cyborg.conductor import agent_calls
from cyborg.conductor import bind_events
from cyborg.conductor import bind_finishing
from cyborg.conductor import bind_programming
from cyborg.conductor import bind_sweep
from cyborg.conductor import bind_transactions as transactions
from cyborg.db import api as db_api
from cyborg.db.queries import arq_binding as queries
from cyborg.conductor import metrics as conductor_metrics

LOG = logging.getLogger(__name__)

# A lease lasts this many sweep intervals; each sweep renews it.
LEASE_INTERVALS = 3
# How long stopping waits for the binds under way.
STOP_TIMEOUT = 10
# A claim that loses a race for attach handles is tried this many times.
CLAIM_ATTEMPTS = 3


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
    """Runs ARQs in BindStarted to their end with a pool of threads.

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
        self.context = cyborg_context.get_admin_context()
        self.agent_calls = agent_calls.AgentCalls(
            self.context, settings.prepare_call_timeout, agents)
        self.events = bind_events.EventSender(self.context, nova)
        self.sweeper = bind_sweep.Sweeper(self)
        self._glance_factory = glance
        self._queue = queue.Queue()
        self._workers = []
        self._sweep_thread = None
        self._renewer = None
        self._stop = threading.Event()
        # Uuids queued or being bound here: their leases are renewed.
        self.under_way = UnderWay()

    def _new_owner(self):
        # Unique per binder and process: a restarted conductor does not
        # take the leases of its previous life for its own work.
        self._pid = os.getpid()
        return '%s/%d/%s' % (self.host, self._pid, uuid.uuid4().hex[:12])

    @property
    def agents(self):
        """The AgentAPI the prepare calls go through."""
        return self.agent_calls.agents

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
        self._sweep_thread = threading.Thread(
            target=self.sweeper.run, args=(self._stop,), daemon=True,
            name='arq-bind-sweep')
        self._sweep_thread.start()
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
        for thread in self._workers + [self._sweep_thread, self._renewer]:
            thread.join(max(0, deadline - time.monotonic()))
            if thread.is_alive():
                LOG.warning('%s is still waiting for an agent; stopping '
                            'without it', thread.name)
        self._workers = []
        self._sweep_thread = None
        self._renewer = None
        self._release_leases()

    def _release_leases(self):
        """Give up the leases of the work left, at stop: another binder (or
        this one restarted) takes it over at once."""
        left = sorted(self.under_way.clear())
        try:
            queries.release_leases(self.context, left, self.owner)
        except exception.DatabaseUnavailable:
            LOG.info('The leases of ARQs %s are taken over when they run '
                     'out: the database is out', left)
        except Exception:
            LOG.exception('Could not release the leases of ARQs %s; they '
                          'are taken over when the leases run out', left)

    @property
    def lease(self):
        """The lease a bind recorded for this binder is taken under."""
        return transactions.Lease(self.owner, self.settings.lease)

    @property
    def claim_for_recording(self):
        """The claim a transaction recording a bind runs for this binder:
        ``claim(context, arq_uuids, now=...)`` of ARQs it has just recorded
        and leased (``lease``); the Claimed is for ``submit``, after the
        commit. AttachHandleRace rolls that transaction back."""
        return functools.partial(
            transactions.claim, owner=self.owner,
            bind_timeout=self.settings.bind_time_limit,
            lease=self.settings.lease, leased=True)

    def submit(self, arq_uuids, claimed=None):
        """Queue ARQs already recorded as BindStarted, with their committed
        claim if they were claimed as they were recorded."""
        batch = self.under_way.add(arq_uuids)
        if batch:
            self._queue.put((batch, claimed))

    def bind_now(self, arq_uuids):
        """``bind`` in the caller's thread, the leases renewed meanwhile
        with those of the workers' binds (os-acc's plug)."""
        batch = self.under_way.add(arq_uuids)
        try:
            return self.bind(batch)
        finally:
            self.under_way.discard(batch)

    def _work(self, stop):
        while True:
            queued = self._queue.get()
            if queued is None:
                return
            batch, claimed = queued
            try:
                if not stop.is_set():
                    self.bind(batch, claimed)
            except exception.DatabaseUnavailable:
                # The outage is logged once (db_api.OUTAGE), not per bind.
                LOG.info('Bind of ARQs %s broken off: the database is out; '
                         'a sweep takes it over', ', '.join(batch))
            except Exception:
                # The ARQs stay in BindStarted: a sweep takes them over.
                LOG.exception('Binding ARQs %s failed', ', '.join(batch))
            finally:
                self.under_way.discard(batch)

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
        decisions.extend(self._prepare(work, locked))
        prepared_at = time.monotonic()
        ended, events = bind_finishing.record_outcomes(
            self.context, decisions, self.owner, timeutils.utcnow(),
            self.settings.lease, events_owed=self.events.owed(),
            programmed=bind_programming.outcomes(work, decisions),
            degraded=bind_programming.degraded(work, decisions))
        finished_at = time.monotonic()
        conductor_metrics.observe_binds(decisions, ended, timeutils.utcnow())
        self.events.send(events)
        LOG.debug('Bind of ARQs %s: claim %.1f ms, agents %.1f ms, finish '
                  '%.1f ms, Nova events %.1f ms', ', '.join(arq_uuids),
                  (claimed_at - started) * 1000,
                  (prepared_at - claimed_at) * 1000,
                  (finished_at - prepared_at) * 1000,
                  (time.monotonic() - finished_at) * 1000)
        return ended

    def _prepare(self, work, locked):
        """The agents' Decisions for ``work``; when the calls break off,
        the regions ``locked`` for programming are given back first."""
        by_host = collections.defaultdict(list)
        for item in work:
            by_host[item.hostname].append(item)
        try:
            return self.agent_calls.prepare_hosts(by_host, self._stop)
        except Exception:
            # Programming, if any, may have begun: what the regions hold
            # is unknown, and their locks are given back.
            bind_finishing.abandon_programming(self.context, self.owner,
                                               locked)
            raise

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
                    self.context, arq_uuids, self.owner, timeutils.utcnow(),
                    self.settings.bind_time_limit, self.settings.lease,
                    resolved=resolved)
            except transactions.AttachHandleRace:
                if attempt == CLAIM_ATTEMPTS:
                    raise
                LOG.debug('Attach handles of ARQs %s were taken meanwhile; '
                          'claiming again', arq_uuids)

    # -- Leases and the sweep ---------------------------------------------

    def _renew_periodically(self, stop):
        # Apart from the sweep, which may wait for Nova or the database
        # longer than a lease lasts: the leases of work under way must not
        # run out while this binder is alive.
        while not stop.wait(self.settings.sweep_interval):
            if db_api.OUTAGE.ongoing:
                continue
            try:
                self.renew_leases()
            except exception.DatabaseUnavailable:
                pass  # Counted and logged by db_api.OUTAGE.
            except Exception:
                LOG.exception('Renewing the leases of the binds under way '
                              'failed; trying again in %s s',
                              self.settings.sweep_interval)

    def renew_leases(self, now=None):
        """Extend the leases of the ARQs queued or being bound here."""
        now = now or timeutils.utcnow()
        active = sorted(self.under_way.uuids())
        return queries.renew_leases(self.context, active, self.owner,
                                    now + self.settings.lease)


    def sweep(self, initial=False):
        """Sweep once now (``bind_sweep.Sweeper.sweep``); return the uuids
        queued for taking over."""
        return self.sweeper.sweep(initial)


class UnderWay:
    """The uuids of the ARQs queued or being bound by one binder, counted
    (a batch taken over may be queued while the same ARQs are bound)."""

    def __init__(self):
        self._counts = collections.Counter()
        self._lock = threading.Lock()

    def add(self, arq_uuids):
        """Count ``arq_uuids`` in; return them as a sorted batch."""
        batch = sorted(set(arq_uuids))
        with self._lock:
            self._counts.update(batch)
        return batch

    def discard(self, batch):
        """Count ``batch`` (an ``add``'s) out."""
        with self._lock:
            self._counts.subtract(batch)
            for arq_uuid in batch:
                if self._counts[arq_uuid] <= 0:
                    del self._counts[arq_uuid]

    def uuids(self):
        """The uuids under way now (a set)."""
        with self._lock:
            return set(self._counts)

    def clear(self):
        """Forget them all; return those there were (a set)."""
        with self._lock:
            left = set(self._counts)
            self._counts.clear()
        return left
