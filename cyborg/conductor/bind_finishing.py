"""The writers that end binds: one transaction each, one per way a bind ends.

``record_outcomes`` applies the outcomes of a batch the agents answered,
``fail_expired`` fails binds past their time, ``collect_owed_events``
gathers the Nova events still owed and ``abandon_programming`` gives back
the regions of a batch that broke off. Each returns the server external
events it leased to its sender (``Events``).
"""

import dataclasses
import logging

from cyborg.clients import nova as nova_client
from cyborg.conductor import bind_transactions
from cyborg.conductor import health as conductor_health
from cyborg.conductor import history
from cyborg.db import api as db_api
from cyborg.db.queries import arq_binding as queries
from cyborg.db.queries import attach_handles
from cyborg.db.queries import deployables as deployable_queries
from cyborg.db.queries import devices as device_queries
from cyborg.db.queries import health as health_queries
from cyborg.db.queries import history as history_queries
from cyborg.db.queries import host_locks
from cyborg.common import vocabulary

LOG = logging.getLogger(__name__)

BOUND = vocabulary.ARQState.BOUND
BIND_FAILED = vocabulary.ARQState.BIND_FAILED
BIND_STARTED = vocabulary.ARQState.BIND_STARTED
Outcome = bind_transactions.Outcome
ANY_HANDLE = bind_transactions.ANY_HANDLE
# Who leases the events of binds a sweep failed (they have no binder).
SWEEP_OWNER = 'sweep'


class Events(list):
    """The server external events a writer collected, and the lease
    (``owner``, ``lease_expires_at``) they were recorded as being sent
    under. ``recorded`` holds the tags (ARQ uuids) of those recorded as
    owed: without [nova] the binds a writer ends owe none, and their
    events are only there to be logged as not sent."""

    def __init__(self, owner, lease_expires_at):
        super().__init__()
        self.owner = owner
        self.lease_expires_at = lease_expires_at
        self.recorded = set()


@dataclasses.dataclass
class _Applied:
    """What applying the decisions changes: ``ended`` (``{arq_uuid:
    state}``), the ARQ ids to set Bound or BindFailed, the handles to free
    and the uuids whose lease this binder gives up."""

    ended: dict = dataclasses.field(default_factory=dict)
    released: list = dataclasses.field(default_factory=list)
    bound_ids: list = dataclasses.field(default_factory=list)
    failed_ids: list = dataclasses.field(default_factory=list)
    failed_reasons: dict = dataclasses.field(default_factory=dict)
    freed_handles: list = dataclasses.field(default_factory=list)


@db_api.writer
def record_outcomes(context, decisions, owner, now, lease, *,
                    programmed=None, events_owed=True, degraded=None):
    """End the binds of ``owner``'s batch as ``decisions`` say, if they still can.

    A decision applies to an ARQ still in the bind it was made for (still
    in BindStarted, recorded at the decision's ``started_at``), leased to
    ``owner`` and holding the attach handle the decision names. PREPARED
    ARQs become Bound, FAILED ones BindFailed and free their handle
    (recording why in ``state_reason``); RETRY ones, and ARQs the decision
    no longer applies to, lose this binder's lease, except an ARQ that is
    in a later bind (unbound and bound again meanwhile). ``programmed``
    (``bind_programming.outcomes``) maps the regions ``owner`` locked for
    programming to the image they now hold (None: unknown); they are
    recorded and their locks freed; ``degraded`` (``bind_programming.
    degraded``) maps those whose content is in doubt to the reason, and
    marks them degraded. ``lease`` (a timedelta) is how long
    the events are leased to their sender; without ``events_owed`` (no
    [nova]) the ARQs ended owe no event.

    Returns ``(ended, events)``: ``{arq_uuid: state}`` and the Events.
    """
    applied, events = _end(context, decisions, owner, now, lease,
                           events_owed=events_owed, programmed=programmed)
    mark_degraded(context, degraded or {}, now)
    return applied.ended, events


def mark_degraded(context, reasons, now):
    """Mark the regions of ``reasons`` (``{deployable id: reason}``: their
    load failed or was not verified) degraded, in the caller's
    transaction; each change gets a ``health`` history entry, whose agent
    is the region's host. Rare by nature: two reads per region changed."""
    entries = []
    for deployable_id, reason in sorted(reasons.items()):
        if not health_queries.set_deployable_health(
                context, deployable_id, vocabulary.Health.DEGRADED, reason):
            continue
        deployable, _ = deployable_queries.get_by_id(context, deployable_id)
        device = device_queries.get_by_id(context, deployable.device_id)
        # Its next reports count towards its recovery: none is skipped.
        host_locks.forget(context, device.hostname)
        LOG.warning('Deployable %s of host %s is degraded: %s',
                    deployable.uuid, device.hostname, reason)
        conductor_health.count_change(conductor_health.DEPLOYABLE,
                                      vocabulary.Health.DEGRADED,
                                      'verification')
        entries.append(conductor_health.entry(
            context, {'id': device.id, 'uuid': device.uuid},
            {'id': deployable.id, 'uuid': deployable.uuid},
            history.EVENTS.HEALTH, now, reason, agent=device.hostname,
            health=vocabulary.Health.DEGRADED))
    history_queries.append(context, entries)


@db_api.writer
def fail_expired(context, rows, reason, now, lease, *, events_owed=True):
    """Set the ARQs of ``rows`` (``binds_started_before``'s) still in
    BindStarted to BindFailed for ``reason``, whichever binder holds them;
    return the Events (leased to SWEEP_OWNER)."""
    decisions = [bind_transactions.failed(row, reason) for row in rows]
    _, events = _end(context, decisions, None, now, lease,
                     events_owed=events_owed)
    return events


@db_api.writer
def collect_owed_events(context, instance_uuids, owner, now, lease, *,
                        events_owed=True):
    """The events still owed for ``instance_uuids`` (none of whose ARQs is
    binding, and whose events nobody holds a live lease on), leased to
    ``owner`` for ``lease``."""
    _, events = _end(context, [], owner, now, lease,
                     instances=instance_uuids, events_owed=events_owed)
    return events


@db_api.writer
def abandon_programming(context, owner, deployable_ids):
    """Give back ``owner``'s programming locks of ``deployable_ids`` with
    their content unknown: a batch broke off after programming may have
    begun."""
    deployable_queries.finish_bind_programming(
        context, dict.fromkeys(deployable_ids), owner)


def _end(context, decisions, owner, now, lease, *, instances=(),
         events_owed=True, programmed=None):
    """Apply ``decisions`` (``owner`` None: whoever holds the ARQs) and
    collect the events of ``instances`` and of the decisions' instances.

    Every ARQ of the instances concerned is locked, so the events of an
    instance are collected once, by the transaction that ends its last
    bind.
    """
    instances = set(instances)
    instances.update(decision.instance_uuid for decision in decisions
                     if decision.instance_uuid)
    rows = {row['id']: dict(row) for row in queries.lock_arqs_of_instances(
        context, [decision.arq_id for decision in decisions], instances)}
    applied = _Applied()
    for decision in decisions:
        _apply(applied, decision, rows.get(decision.arq_id), owner)
    # The events are leased to this sender (EventSender.send clears them
    # once Nova has them): if it dies or Nova cannot be reached, a sweep
    # sends them once the lease has run out.
    events = Events(owner or SWEEP_OWNER, now + lease)
    told = _told(rows, applied.ended, now)
    earlier = [row for row in told if row['uuid'] not in applied.ended]
    leased = told if events_owed else earlier
    _write(context, applied, owner, now, events,
           [row['id'] for row in leased], events_owed)
    if programmed:
        # Each load is a program of the region's history, whatever its
        # lock: the region holds what the agent answered either way.
        history_queries.append_bind_loads(context, programmed,
                                          history.EVENTS.PROGRAM, now)
        deployable_queries.finish_bind_programming(context, programmed, owner)
    # ARQs that ended before this transaction: their events are leased
    # apart (those ended here were leased as they ended).
    queries.lease_events(context, [row['id'] for row in earlier],
                         events.owner, events.lease_expires_at)
    events.recorded.update(row['uuid'] for row in leased)
    events.extend(nova_client.arq_event(row['instance_uuid'], row['uuid'],
                                        row['state'] == BOUND)
                  for row in told)
    return applied, events


def _apply(applied, decision, row, owner):
    """Apply one decision to its locked ARQ ``row`` (None: deleted), in
    memory; ``_write`` writes what ``applied`` gathered."""
    binding = row is not None and row['state'] == BIND_STARTED
    later_bind = (binding and decision.started_at is not None
                  and bind_transactions.bind_started_at(row)
                  != decision.started_at)
    applies = (
        binding and not later_bind
        and (owner is None or row['bind_owner'] == owner)
        and (decision.attach_handle_id is ANY_HANDLE
             or row['attach_handle_id'] == decision.attach_handle_id))
    if later_bind:
        LOG.debug('ARQ %s was bound again since this outcome was '
                  'decided; it is left to its new bind', decision.uuid)
        return
    if not applies or decision.outcome == Outcome.RETRY:
        applied.released.append(decision.uuid)
        if applies:
            LOG.info('Bind of ARQ %s is tried again later: %s',
                     decision.uuid, decision.reason)
        return
    if decision.outcome == Outcome.PREPARED:
        applied.bound_ids.append(row['id'])
        row['state'] = BOUND
        LOG.info('ARQ %s of instance %s is bound', row['uuid'],
                 row['instance_uuid'])
    else:
        applied.failed_ids.append(row['id'])
        applied.failed_reasons[row['id']] = decision.reason
        if row['attach_handle_id'] is not None:
            applied.freed_handles.append(row['attach_handle_id'])
        row['state'] = BIND_FAILED
        LOG.warning('Bind of ARQ %s of instance %s failed: %s',
                    row['uuid'], row['instance_uuid'], decision.reason)
    row['bind_event_pending'] = True
    applied.ended[row['uuid']] = row['state']


def _write(context, applied, owner, now, events, leased_ids, events_owed):
    """End the binds (each recorded in its deployable's history), free the
    handles and give up the leases applied; the ARQs ended whose ids are in
    ``leased_ids`` take the lease of ``events``."""
    # The history first: a failed ARQ lets go of its attach handle below.
    # Each entry names who asked for the bind (kept with the ARQ when it
    # was recorded), not this binder.
    history_queries.append_for_arqs(
        context, applied.bound_ids + applied.failed_ids,
        history.EVENTS.BIND, now, history.who(context),
        failed=applied.failed_reasons, of_bind=True)
    event_lease = (events.owner, events.lease_expires_at, leased_ids)
    queries.end_binds(context, applied.bound_ids, BOUND, now,
                      event_lease=event_lease, events_owed=events_owed)
    queries.end_binds(context, applied.failed_ids, BIND_FAILED, now,
                      release_attach_handle=True,
                      reasons=applied.failed_reasons, event_lease=event_lease,
                      events_owed=events_owed)
    attach_handles.free(context, applied.freed_handles, now)
    if owner is not None:
        queries.release_leases(context, applied.released, owner)


def _told(rows, ended, now):
    """The ARQ rows (by id) whose events Nova is to be told now: those of
    the instances of ``rows`` none of whose ARQs is still binding, ended
    here or earlier (still pending)."""
    binding = {row['instance_uuid'] for row in rows.values()
               if row['state'] == BIND_STARTED}
    told = []
    for row in rows.values():
        if not row['instance_uuid'] or row['instance_uuid'] in binding:
            continue
        if row['uuid'] in ended:
            told.append(row)
        # An event another sender holds a live lease on is theirs to send.
        elif row['bind_event_pending'] and (
                row['bind_lease_expires_at'] is None
                or row['bind_lease_expires_at'] <= now):
            told.append(row)
    return sorted(told, key=lambda row: row['id'])
