"""The conductor's binder: finishes recorded binds asynchronously.

``arqs.bind`` records the ARQs of a bind request as BindStarted (with host,
resource provider and instance) and hands their uuids to ``Binder.submit``;
an ARQ in BindStarted is the durable record of bind work, and the binder
finishes every such ARQ, including those of a conductor that died.

One bind request (a batch) costs two transactions and one agent call per
host, whatever the number of ARQs:

1. claim: lease the ARQs to this binder, load them with their deployable
   (the one whose provider is ``device_rp_uuid``) and device, fail those on
   an unknown provider, another host or a disabled device, and take a free
   attach handle of each deployable (a locking read, then a compare-and-set
   on ``in_use``, so that two binders never take one handle; the unique
   ``attach_handle_id`` of ARQs is the backstop);
2. ``AgentAPI.prepare_arqs`` on each host, the hosts at the same time,
   each bounded by what is left of ``[conductor] bind_timeout``;
3. finish: move the ARQs still leased to this binder with the same handle
   to Bound or BindFailed (a failed ARQ frees its handle; an ARQ unbound or
   deleted meanwhile is left alone) and, for each instance none of whose
   ARQs is still binding, collect the events Nova is owed.

The events are sent after the commit, in one request per batch
(``clients/nova.py``). A thread of its own renews the leases of the work
under way every ``bind_sweep_interval``; a sweep at start and as often
fails binds older than ``bind_timeout``, takes over binds whose lease ran
out (their conductor died) and sends events still owed.
"""

import collections
from concurrent import futures
import dataclasses
import datetime
import json
import logging
import os
import queue
import threading
import time
import uuid

import oslo_messaging
from oslo_utils import timeutils

from cyborg import conf
from cyborg import context as cyborg_context
from cyborg.agent import rpcapi as agent_rpcapi
from cyborg.clients import nova as nova_client
from cyborg.db import api as db_api
from cyborg.db.queries import arq_binding as queries
from cyborg.db.queries import attach_handles
from cyborg.objects import fields

LOG = logging.getLogger(__name__)

BOUND = fields.ARQState.BOUND
BIND_FAILED = fields.ARQState.BIND_FAILED
BIND_STARTED = fields.ARQState.BIND_STARTED
DISABLED_DEVICE_STATUS = fields.DeviceStatus.MAINTAINING
# A lease lasts this many sweep intervals; each sweep renews it.
LEASE_INTERVALS = 3
# How long stopping waits for the binds under way.
STOP_TIMEOUT = 10
# At most this many orphaned ARQs are claimed as one batch.
SWEEP_BATCH = 100
# A claim that loses a race for attach handles is tried this many times.
CLAIM_ATTEMPTS = 3


def _bind_timeout():
    return datetime.timedelta(seconds=conf.CONF.conductor.bind_timeout)


def _lease():
    return datetime.timedelta(
        seconds=LEASE_INTERVALS * conf.CONF.conductor.bind_sweep_interval)


@dataclasses.dataclass
class Work:
    """An ARQ claimed by a binder, with what its agent needs."""

    arq_id: int
    uuid: str
    hostname: str
    instance_uuid: str
    started_at: datetime.datetime
    deadline: datetime.datetime
    attach_handle_id: int = None
    attach_type: str = None
    attach_info: dict = None
    deployable_name: str = None
    driver_name: str = None
    request_group: dict = dataclasses.field(default_factory=dict)

    def for_agent(self):
        """The dict ``AgentAPI.prepare_arqs`` takes for this ARQ."""
        return {'uuid': self.uuid, 'driver_name': self.driver_name,
                'deployable_name': self.deployable_name,
                'attach_type': self.attach_type,
                'attach_info': self.attach_info,
                'request_group': self.request_group}


class AttachHandleRace(Exception):
    """Another writer took attach handles this claim had locked as free."""


# Outcomes of an ARQ's bind, decided before the finishing transaction.
PREPARED = 'prepared'
FAILED = 'failed'
RETRY = 'retry'
# The finishing transaction accepts whatever attach handle the ARQ holds.
ANY_HANDLE = object()


@dataclasses.dataclass
class Decision:
    """How the bind of one ARQ ends, for ``finish`` to apply if it still can.

    ``started_at`` is when the bind was recorded (the ARQ's ``updated_at``
    while it is in BindStarted): it tells this bind from a later one of the
    same ARQ, after an unbind, that the decision must not touch.
    """

    arq_id: int
    uuid: str
    instance_uuid: str
    outcome: str
    attach_handle_id: object = ANY_HANDLE
    reason: str = None
    started_at: datetime.datetime = None


class Binder:
    """Finishes ARQs in BindStarted with a pool of threads; see the module docstring.

    ``agents`` (an AgentAPI) and ``nova`` (a NovaClient) default to the
    real clients, made on first use.
    """

    def __init__(self, host, agents=None, nova=None):
        self.host = host
        self.owner = self._new_owner()
        self._agents = agents
        self._nova = nova
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
        # Unique per binder and process, so a restarted conductor does not
        # mistake the leases of its previous life for work it is doing.
        self._pid = os.getpid()
        return '%s/%d/%s' % (self.host, self._pid, uuid.uuid4().hex[:12])

    @property
    def agents(self):
        if self._agents is None:
            self._agents = agent_rpcapi.AgentAPI()
        return self._agents

    @property
    def nova(self):
        if self._nova is None:
            self._nova = nova_client.get_client()
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
        for number in range(conf.CONF.conductor.bind_workers):
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
        while True:
            try:
                batch = self._queue.get_nowait()
            except queue.Empty:
                break
            if batch is not None:
                self._forget(batch)
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
        with self._active_lock:
            left = sorted(self._active)
        try:
            # Another binder (or this one restarted) takes them over at once.
            queries.release_leases(self._context, left, self.owner)
        except Exception:
            LOG.exception('Could not release the leases of ARQs %s; they '
                          'are taken over when the leases run out', left)

    def submit(self, arq_uuids):
        """Queue ARQs already recorded as BindStarted."""
        batch = sorted(set(arq_uuids))
        if not batch:
            return
        with self._active_lock:
            self._active.update(batch)
        self._queue.put(batch)

    def _forget(self, batch):
        with self._active_lock:
            self._active.subtract(batch)
            for arq_uuid in batch:
                if self._active[arq_uuid] <= 0:
                    del self._active[arq_uuid]

    def _work(self, stop):
        while True:
            batch = self._queue.get()
            if batch is None:
                return
            try:
                if not stop.is_set():
                    self.bind(batch)
            except Exception:
                # The ARQs stay in BindStarted: a sweep takes them over.
                LOG.exception('Binding ARQs %s failed', ', '.join(batch))
            finally:
                self._forget(batch)

    # -- One batch --------------------------------------------------------

    def bind(self, arq_uuids):
        """Bind the ARQs of ``arq_uuids`` now, in this thread.

        Returns ``{arq_uuid: state}`` of the ARQs this call moved out of
        BindStarted.
        """
        for attempt in range(1, CLAIM_ATTEMPTS + 1):
            try:
                work, decisions = claim(self._context, arq_uuids, self.owner,
                                        timeutils.utcnow())
                break
            except AttachHandleRace:
                if attempt == CLAIM_ATTEMPTS:
                    raise
                LOG.debug('Attach handles of ARQs %s were taken meanwhile; '
                          'claiming again', arq_uuids)
        by_host = collections.defaultdict(list)
        for item in work:
            by_host[item.hostname].append(item)
        decisions.extend(self._prepare_hosts(by_host))
        ended, events = finish(self._context, decisions, self.owner,
                               timeutils.utcnow())
        self._notify(events)
        return ended

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
        """One agent call for the ARQs of ``host``; their Decisions."""
        now = timeutils.utcnow()
        deadline = min(item.deadline for item in items)
        remaining = (deadline - now).total_seconds()

        def decide(outcome, reason=None, item=None):
            chosen = [item] if item is not None else items
            return [Decision(entry.arq_id, entry.uuid, entry.instance_uuid,
                             outcome, entry.attach_handle_id, reason,
                             entry.started_at)
                    for entry in chosen]

        if remaining <= 0:
            return decide(FAILED, 'bind_timeout passed before the agent of '
                          '%s was asked' % host)
        try:
            # The agent may program an FPGA first: allow it what is left of
            # the bind's time rather than the usual RPC timeout.
            answers = self.agents.prepare_arqs(
                self._context, host, [item.for_agent() for item in items],
                timeout=max(1, int(remaining + 0.999)))
        except oslo_messaging.MessagingTimeout:
            if timeutils.utcnow() >= deadline:
                return decide(FAILED, 'the agent of %s did not answer within '
                              'bind_timeout' % host)
            return decide(RETRY, 'the agent of %s did not answer' % host)
        except (oslo_messaging.RemoteError,
                oslo_messaging.RPCVersionCapError) as error:
            return decide(FAILED, 'the agent of %s refused: %s' % (host, error))
        except oslo_messaging.MessagingException as error:
            # The transport may come back: a sweep tries again.
            LOG.warning('Could not reach the agent of %s for ARQs %s: %s',
                        host, ', '.join(item.uuid for item in items), error)
            return decide(RETRY, str(error))
        decisions = []
        for item in items:
            answer = (answers or {}).get(item.uuid)
            if answer is None:
                decisions.extend(decide(FAILED, 'the agent of %s did not '
                                        'answer for this ARQ' % host, item))
            elif answer.get('prepared'):
                decisions.extend(decide(PREPARED, item=item))
            else:
                decisions.extend(decide(FAILED, answer.get('reason'), item))
        return decisions

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
        if delivered:
            queries.clear_events_pending(self._context, tags, events.owner,
                                         events.lease_expires_at)

    # -- The sweep --------------------------------------------------------

    def _renew_periodically(self, stop):
        # Apart from the sweep, which may wait for Nova or the database
        # longer than a lease lasts: the leases of work under way must not
        # run out while this binder is alive.
        while not stop.wait(conf.CONF.conductor.bind_sweep_interval):
            try:
                self.renew_leases()
            except Exception:
                LOG.exception('Renewing the leases of the binds under way '
                              'failed; trying again in %s s',
                              conf.CONF.conductor.bind_sweep_interval)

    def renew_leases(self, now=None):
        """Extend the leases of the ARQs queued or being bound here."""
        now = now or timeutils.utcnow()
        with self._active_lock:
            active = sorted(self._active)
        return queries.renew_leases(self._context, active, self.owner,
                                    now + _lease())

    def _sweep_periodically(self, stop):
        first = True
        while not stop.is_set():
            try:
                self.sweep(initial=first)
            except Exception:
                LOG.exception('Sweep of the recorded binds failed; trying '
                              'again in %s s',
                              conf.CONF.conductor.bind_sweep_interval)
            first = False
            stop.wait(conf.CONF.conductor.bind_sweep_interval)

    def sweep(self, initial=False):
        """Renew, time out, take over and notify; see the module docstring.

        ``initial`` (at start) takes over every ARQ that nobody leased,
        however young. Returns the uuids queued for taking over.
        """
        now = timeutils.utcnow()
        with self._active_lock:
            active = set(self._active)
        self.renew_leases(now)

        expired = queries.binds_started_before(self._context,
                                               now - _bind_timeout())
        if expired:
            self.fail_expired(expired)
        expired = {row['uuid'] for row in expired}

        unowned_since = now if initial else now - datetime.timedelta(
            seconds=conf.CONF.conductor.bind_sweep_interval)
        # One batch per instance, as its bind request was: a device that
        # hangs then holds up only the ARQs of its own instance.
        by_instance = collections.defaultdict(list)
        orphans = []
        for arq_uuid, instance_uuid in queries.orphaned_binds(
                self._context, now, unowned_since):
            if arq_uuid not in active and arq_uuid not in expired:
                by_instance[instance_uuid].append(arq_uuid)
                orphans.append(arq_uuid)
        for instance_uuid, arq_uuids in by_instance.items():
            for start in range(0, len(arq_uuids), SWEEP_BATCH):
                batch = arq_uuids[start:start + SWEEP_BATCH]
                LOG.info('Taking over the binds of ARQs %s of instance %s',
                         ', '.join(batch), instance_uuid)
                self.submit(batch)

        owed = queries.instances_owed_events(self._context, now)
        if owed:
            _, events = finish(self._context, [], self.owner, now,
                               instance_uuids=owed)
            self._notify(events)
        return orphans

    def fail_expired(self, rows):
        """Set ARQs (``binds_started_before`` rows) still in BindStarted to
        BindFailed, whoever works on them."""
        decisions = [Decision(row['id'], row['uuid'], row['instance_uuid'],
                              FAILED, ANY_HANDLE,
                              'not bound within bind_timeout (%s s)'
                              % conf.CONF.conductor.bind_timeout,
                              _started_at(row))
                     for row in rows]
        _, events = finish(self._context, decisions, None, timeutils.utcnow())
        self._notify(events)


# -- The two transactions of a batch -----------------------------------------

@db_api.writer
def claim(context, arq_uuids, owner, now):
    """Lease the ARQs and give each a free attach handle, in one transaction.

    Returns ``(work, decisions)``: a Work per ARQ to prepare on its host,
    and a FAILED Decision per ARQ that cannot be bound. ARQs that another
    binder holds, or that left BindStarted, are in neither.

    :raises: AttachHandleRace when the compare-and-set on the handles
        finds one taken; nothing is written then.
    """
    queries.take_leases(context, arq_uuids, owner, now + _lease(), now)
    rows = queries.leased_arqs(context, arq_uuids, owner)
    work = []
    decisions = []
    waiting = collections.defaultdict(list)

    def fail(row, reason):
        decisions.append(Decision(row['id'], row['uuid'],
                                  row['instance_uuid'], FAILED, ANY_HANDLE,
                                  reason, _started_at(row)))

    for row in rows:
        started_at = _started_at(row)
        deadline = started_at + _bind_timeout()
        item = Work(arq_id=row['id'], uuid=row['uuid'],
                    hostname=row['hostname'],
                    instance_uuid=row['instance_uuid'],
                    started_at=started_at, deadline=deadline,
                    deployable_name=row['deployable_name'],
                    driver_name=row['deployable_driver_name'],
                    request_group=_request_group(row))
        if now >= deadline:
            fail(row, 'not bound within bind_timeout')
        elif row['deployable_row_id'] is None:
            fail(row, 'no deployable has resource provider %s'
                 % row['device_rp_uuid'])
        elif row['device_hostname'] != row['hostname']:
            fail(row, 'resource provider %s is on host %s, not %s' % (
                row['device_rp_uuid'], row['device_hostname'],
                row['hostname']))
        elif row['device_status'] == DISABLED_DEVICE_STATUS:
            fail(row, 'the device of resource provider %s is disabled'
                 % row['device_rp_uuid'])
        elif row['attach_handle_id'] is not None:
            # Taken over from a binder that had already chosen the handle.
            if row['attach_handle_deployable_id'] != row['deployable_row_id']:
                fail(row, 'its attach handle is not one of resource '
                     'provider %s' % row['device_rp_uuid'])
                continue
            item.attach_handle_id = row['attach_handle_id']
            item.attach_type = row['attach_handle_type']
            item.attach_info = json.loads(row['attach_handle_info'])
            work.append(item)
        else:
            waiting[row['deployable_row_id']].append((row, item))

    free = collections.defaultdict(list)
    if waiting:
        handles = attach_handles.lock_free(context, list(waiting))
        held = attach_handles.held(
            context, [handle['id'] for handle in handles])
        if held:
            LOG.warning('Attach handles %s are marked free but ARQs hold '
                        'them; skipped', sorted(held))
        for handle in handles:
            if handle['id'] not in held:
                free[handle['deployable_id']].append(handle)

    assignments = {}
    for deployable_id, entries in waiting.items():
        handles = free[deployable_id]
        for index, (row, item) in enumerate(entries):
            if index >= len(handles):
                fail(row, 'deployable %s has no free attach handle'
                     % row['deployable_name'])
                continue
            handle = handles[index]
            item.attach_handle_id = handle['id']
            item.attach_type = handle['attach_type']
            item.attach_info = json.loads(handle['attach_info'])
            assignments[row['id']] = (handle['id'], deployable_id)
            work.append(item)

    taken = attach_handles.take(
        context, [handle_id for handle_id, _ in assignments.values()], now)
    if taken != len(assignments):
        raise AttachHandleRace()
    queries.assign_attach_handles(context, assignments, owner)
    return work, decisions


def _started_at(row):
    """When the bind of an ARQ row in BindStarted was recorded."""
    return row['updated_at'] or row['created_at']


def _request_group(row):
    try:
        groups = json.loads(row['profile_json'])
        group = groups[row['device_profile_group_id']]
    except (ValueError, TypeError, IndexError, KeyError):
        return {}
    return group if isinstance(group, dict) else {}


@db_api.writer
def finish(context, decisions, owner, now, instance_uuids=()):
    """Apply ``decisions`` and collect the events Nova is owed, in one transaction.

    A decision applies to an ARQ still in the bind it was made for (still
    in BindStarted, recorded at the decision's ``started_at``), leased to
    ``owner`` (any binder when None) and holding the attach handle the
    decision names. PREPARED ARQs become Bound, FAILED ones BindFailed and
    free their handle; RETRY ones, and ARQs the decision no longer applies
    to, lose this binder's lease, except an ARQ that is in a later bind
    (unbound and bound again meanwhile): that bind is not this decision's.
    Every ARQ of the instances concerned is locked, so the events of an
    instance are collected once, by the transaction that ends its last
    bind.

    Returns ``(ended, events)``: ``{arq_uuid: state}`` and the server
    external events to send (``Events``, which also names their lease).
    """
    instances = set(instance_uuids)
    instances.update(decision.instance_uuid for decision in decisions
                     if decision.instance_uuid)
    rows = {row['id']: dict(row) for row in queries.lock_arqs_of_instances(
        context, [decision.arq_id for decision in decisions], instances)}

    ended = {}
    released = []
    bound_ids = []
    failed_ids = []
    freed_handles = []
    for decision in decisions:
        row = rows.get(decision.arq_id)
        binding = row is not None and row['state'] == BIND_STARTED
        later_bind = (binding and decision.started_at is not None
                      and _started_at(row) != decision.started_at)
        applies = (
            binding and not later_bind
            and (owner is None or row['bind_owner'] == owner)
            and (decision.attach_handle_id is ANY_HANDLE
                 or row['attach_handle_id'] == decision.attach_handle_id))
        if later_bind:
            LOG.debug('ARQ %s was bound again since this outcome was '
                      'decided; it is left to its new bind', decision.uuid)
            continue
        if not applies or decision.outcome == RETRY:
            released.append(decision.uuid)
            if applies:
                LOG.info('Bind of ARQ %s is tried again later: %s',
                         decision.uuid, decision.reason)
            continue
        if decision.outcome == PREPARED:
            bound_ids.append(row['id'])
            row['state'] = BOUND
            LOG.info('ARQ %s of instance %s is bound', row['uuid'],
                     row['instance_uuid'])
        else:
            failed_ids.append(row['id'])
            if row['attach_handle_id'] is not None:
                freed_handles.append(row['attach_handle_id'])
            row['state'] = BIND_FAILED
            LOG.warning('Bind of ARQ %s of instance %s failed: %s',
                        row['uuid'], row['instance_uuid'], decision.reason)
        row['bind_event_pending'] = True
        ended[row['uuid']] = row['state']

    queries.end_binds(context, bound_ids, BOUND, now, False)
    queries.end_binds(context, failed_ids, BIND_FAILED, now, True)
    attach_handles.free(context, freed_handles, now)
    if owner is not None:
        queries.release_leases(context, released, owner)

    binding = {row['instance_uuid'] for row in rows.values()
               if row['state'] == BIND_STARTED}
    # An event another sender holds a live lease on is theirs to send.
    told = [row for row in rows.values()
            if row['bind_event_pending'] and row['instance_uuid']
            and row['instance_uuid'] not in binding
            and (row['uuid'] in ended
                 or row['bind_lease_expires_at'] is None
                 or row['bind_lease_expires_at'] <= now)]
    # The events stay pending until Nova has them (Binder._notify), leased
    # to this sender meanwhile: if it dies or Nova cannot be reached, a
    # sweep sends them once the lease has run out.
    events = Events(owner or 'sweep', now + _lease())
    queries.lease_events(context, [row['id'] for row in told],
                         events.owner, events.lease_expires_at)
    events.extend(nova_client.arq_event(row['instance_uuid'], row['uuid'],
                                        row['state'] == BOUND)
                  for row in sorted(told, key=lambda row: row['id']))
    return ended, events


class Events(list):
    """The server external events ``finish`` collected, and the lease
    (``owner``, ``lease_expires_at``) they were recorded as being sent
    under."""

    def __init__(self, owner, lease_expires_at):
        super().__init__()
        self.owner = owner
        self.lease_expires_at = lease_expires_at
