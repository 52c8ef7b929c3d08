"""The claim of a bind batch: lease the ARQs, check them, take handles.

``claim`` is one transaction of a fixed number of statements, whatever the
number of ARQs: it hands back ``Work`` for the agent and a FAILED
``Decision`` for each ARQ that cannot be bound, and sets aside those that
ask for programming until Glance has been asked
(``cyborg.conductor.bind_programming``). ``Outcome`` names how a bind ends.
"""

import collections
import dataclasses
import datetime
import enum
import json
import logging
import typing

import os_traits

from cyborg.conductor import bind_programming
from cyborg.conductor import releasing
from cyborg.db import api as db_api
from cyborg.db.queries import arq_binding as queries
from cyborg.db.queries import attach_handles
from cyborg.db.queries import deployables as deployable_queries
from cyborg.common import vocabulary

LOG = logging.getLogger(__name__)

DISABLED_DEVICE_STATUS = vocabulary.DeviceStatus.MAINTAINING



class Outcome(str, enum.Enum):
    """How the bind of an ARQ ends, decided before the transaction that
    records it (``cyborg.conductor.bind_finishing``)."""

    PREPARED = 'prepared'
    FAILED = 'failed'
    # Neither: the binder lets go of the ARQ, and a sweep takes it over.
    RETRY = 'retry'


# The writer that ends a bind accepts whatever attach handle the ARQ holds.
ANY_HANDLE = object()


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
    # When this ARQ took its handle (the handle's updated_at).
    attach_handle_taken_at: datetime.datetime = None
    deployable_id: int = None
    deployable_name: str = None
    driver_name: str = None
    request_group: dict = dataclasses.field(default_factory=dict)
    # The image the agent loads into the deployable first, or None.
    bitstream_id: str = None

    def for_agent(self):
        """The dict ``AgentAPI.prepare_arqs`` takes for this ARQ."""
        return {'uuid': self.uuid, 'driver_name': self.driver_name,
                'deployable_name': self.deployable_name,
                'attach_type': self.attach_type,
                'attach_info': self.attach_info,
                'request_group': self.request_group,
                'hold': releasing.hold(self.uuid,
                                       self.attach_handle_taken_at),
                'bitstream_id': self.bitstream_id}

    def decided(self, outcome, reason=None):
        """This ARQ's Decision of ``outcome``, for its attach handle."""
        return Decision(self.arq_id, self.uuid, self.instance_uuid, outcome,
                        self.attach_handle_id, reason, self.started_at)

    def answered(self, host, answers):
        """Its Decision from the answers (by uuid) of the agent of ``host``."""
        answer = (answers or {}).get(self.uuid)
        if answer is None:
            return self.decided(Outcome.FAILED, 'the agent of %s did not '
                                'answer for this ARQ' % host)
        if answer.get('prepared'):
            decision = self.decided(Outcome.PREPARED)
            decision.loaded = answer.get('readback')
            return decision
        decision = self.decided(Outcome.FAILED, answer.get('reason'))
        decision.suspect = bool(answer.get('suspect'))
        return decision


class Lease(typing.NamedTuple):
    """A binder's lease terms: its ``owner`` name and how long a lease
    lasts (``duration``, a timedelta)."""

    owner: str
    duration: datetime.timedelta

    def taken_at(self, now):
        """``(owner, expires_at)`` of a lease taken at ``now``."""
        return self.owner, now + self.duration


class AttachHandleRace(Exception):
    """Another writer took attach handles this claim had locked as free."""


@dataclasses.dataclass
class Decision:
    """How the bind of one ARQ ends, for a writer of ``bind_finishing`` to
    apply if it still can.

    ``started_at`` is when the bind was recorded (the ARQ's ``updated_at``
    while it is in BindStarted): it tells this bind from a later one of the
    same ARQ, after an unbind, that the decision must not touch.
    """

    arq_id: int
    uuid: str
    instance_uuid: str
    outcome: Outcome
    attach_handle_id: object = ANY_HANDLE
    reason: str = None
    started_at: datetime.datetime = None
    # What the agent reported of the region it loaded for this ARQ: what
    # it holds once verified (``readback``), or that its content is in
    # doubt (``suspect``, the region is then marked degraded).
    loaded: dict = None
    suspect: bool = False


def bind_started_at(row):
    """When the bind of an ARQ row in BindStarted was recorded."""
    return row['updated_at'] or row['created_at']


def failed(row, reason):
    """A FAILED Decision for an ARQ row, whatever handle it holds."""
    return Decision(row['id'], row['uuid'], row['instance_uuid'],
                    Outcome.FAILED, ANY_HANDLE, reason, bind_started_at(row))


def _request_group(row):
    try:
        groups = json.loads(row['profile_json'])
        group = groups[row['device_profile_group_id']]
    except (ValueError, TypeError, IndexError, KeyError):
        return {}
    return group if isinstance(group, dict) else {}


# -- claim --------------------------------------------------------------------

@dataclasses.dataclass
class Claimed:
    """What ``claim`` decided: ``work`` (a Work per ARQ to prepare on its
    host), ``decisions`` (a FAILED or RETRY Decision per ARQ that cannot
    be bound now), ``pending`` (first pass: the ARQs asking for
    programming, set aside as ``bind_programming.Pending``) and
    ``programming`` (second pass: ``bind_programming.Programs``, whose
    ``images`` are the regions this claim locked for programming).
    ``waiting`` holds ``(row, Work)`` waiting for a free handle, by
    deployable row id."""

    work: list = dataclasses.field(default_factory=list)
    decisions: list = dataclasses.field(default_factory=list)
    pending: list = dataclasses.field(default_factory=list)
    programming: bind_programming.Programs = dataclasses.field(
        default_factory=bind_programming.Programs)
    waiting: dict = dataclasses.field(
        default_factory=lambda: collections.defaultdict(list))

    def fail(self, row, reason):
        self.decisions.append(failed(row, reason))

    def retry(self, row, reason):
        self.decisions.append(Decision(
            row['id'], row['uuid'], row['instance_uuid'], Outcome.RETRY,
            ANY_HANDLE, reason, bind_started_at(row)))

    def drop(self, row, item):
        """Take ``item`` (of ``row``) back out of ``work`` or ``waiting``."""
        if item in self.work:
            self.work.remove(item)
        else:
            self.waiting[row['deployable_row_id']].remove((row, item))


@db_api.writer
def claim(context, arq_uuids, owner, now, bind_timeout, lease, *,
          resolved=None, leased=False):
    """Lease the ARQs and give each a free attach handle, in one transaction.

    ``bind_timeout`` (a timedelta) is how long a bind may take from when
    it was recorded; ``lease`` how long the lease taken here lasts. An ARQ
    whose deployable is being programmed (``cyborg.conductor.programming``,
    or another bind) fails. Without ``resolved``, an ARQ whose group asks
    for programming is set aside (``Claimed.pending``); with it (a
    ``bind_programming.Resolved``, for those ARQs) they are claimed, their
    regions locked for programming (``bind_programming``). With ``leased``
    the caller's transaction has leased them to ``owner`` already (as it
    recorded them: ``arqs.record_bind``).

    Returns a Claimed. ARQs that another binder holds, or that left
    BindStarted, are in none of its lists.

    :raises: AttachHandleRace when the compare-and-set on the handles
        finds one taken; nothing is written then.
    """
    if not leased:
        queries.take_leases(context, arq_uuids, owner, now + lease, now)
    rows = queries.leased_arqs(context, arq_uuids, owner)
    programming = deployable_queries.being_programmed(
        context, {row['deployable_row_id'] for row in rows
                  if row['deployable_row_id'] is not None}, now)
    claimed = Claimed()
    for row in rows:
        _check(claimed, row, now, bind_timeout, programming, resolved)
    if resolved is None:
        _add_region_attributes(context, claimed)
    else:
        _reserve_regions(context, claimed, owner, now, resolved)
    assignments = _assign_free_handles(context, claimed, now)
    queries.assign_attach_handles(context, assignments, owner)
    return claimed


def _check(claimed, row, now, bind_timeout, programming=frozenset(),
           resolved=None):
    """Fail the ARQ ``row`` if it cannot be bound, else keep it as Work:
    ready when it already holds a handle, waiting for one otherwise (or
    pending, when it asks for programming and ``resolved`` is None).

    ``programming`` holds the ids of the deployables being programmed.
    """
    started_at = bind_started_at(row)
    item = Work(arq_id=row['id'], uuid=row['uuid'],
                hostname=row['hostname'],
                instance_uuid=row['instance_uuid'],
                started_at=started_at, deadline=started_at + bind_timeout,
                deployable_id=row['deployable_row_id'],
                deployable_name=row['deployable_name'],
                driver_name=row['deployable_driver_name'],
                request_group=_request_group(row))
    reason = (_refusal(row, now >= item.deadline, programming)
              or _resource_class_refusal(row, item.request_group)
              or _trait_refusal(row, item.request_group))
    if reason is not None:
        claimed.fail(row, reason)
    elif not _may_program(claimed, row, item, resolved):
        return
    elif row['attach_handle_id'] is not None:
        # Taken over from a binder that had already chosen the handle.
        if row['attach_handle_deployable_id'] != row['deployable_row_id']:
            claimed.fail(row, 'its attach handle is not one of resource '
                         'provider %s' % row['device_rp_uuid'])
            return
        item.attach_handle_id = row['attach_handle_id']
        item.attach_type = row['attach_handle_type']
        item.attach_info = json.loads(row['attach_handle_info'])
        item.attach_handle_taken_at = row['attach_handle_updated_at']
        claimed.work.append(item)
    else:
        claimed.waiting[row['deployable_row_id']].append((row, item))


def _refusal(row, late, programming):
    """Why the ARQ ``row`` cannot be bound at all, or None."""
    if late:
        return 'not bound within bind_timeout'
    if row['deployable_row_id'] is None:
        return ('no deployable has resource provider %s'
                % row['device_rp_uuid'])
    if row['device_hostname'] != row['hostname']:
        return 'resource provider %s is on host %s, not %s' % (
            row['device_rp_uuid'], row['device_hostname'], row['hostname'])
    if row['device_status'] == DISABLED_DEVICE_STATUS:
        return ('the device of resource provider %s is disabled'
                % row['device_rp_uuid'])
    if drained_before(row, bind_started_at(row)):
        return 'resource provider %s is drained' % row['device_rp_uuid']
    if row['deployable_row_id'] in programming:
        return 'deployable %s is being programmed' % row['deployable_name']
    return None


def drained_before(row, started_at):
    """Whether the provider of the ARQ ``row`` was drained (its device,
    deployable, parent or root) at or before ``started_at``, when its bind
    was recorded. A bind recorded before the drain was allocated while
    Placement still offered the provider: it may finish, and the region
    shows ``draining`` while it holds the handle. One recorded after it
    fails, even when a caller names the provider directly."""
    marks = [row[key] for key in ('device_drain_since',
                                  'deployable_drain_since',
                                  'above_drain_since')
             if row[key] is not None]
    return bool(marks) and min(marks) <= started_at


def _resource_class_refusal(row, group):
    """Why the provider cannot serve the group's resources, or None: a
    group asking ``resources:FPGA`` bound to a VGPU provider would end Bound
    with a mediated device. (Nova binds to a provider Placement chose for
    the group; another caller may name any provider.)"""
    wanted = sorted(key.split(':', 1)[1] for key in group
                    if key.startswith('resources:'))
    if not wanted or row['deployable_rc'] in wanted:
        return None
    return ('resource provider %s offers %s, not the %s the request group '
            'asks for' % (row['device_rp_uuid'], row['deployable_rc'] or
                          'no resource class', ' or '.join(wanted)))


def _trait_refusal(row, group):
    """Why the provider's traits do not meet the group's ``trait:`` keys
    (``required`` traits it lacks, ``forbidden`` ones it has), or None.
    The provider's traits are OWNER_CYBORG and the deployable's ``trait*``
    attributes, as Placement has them."""
    offered = {os_traits.OWNER_CYBORG}
    offered.update((row['deployable_traits'] or '').split(
        queries.TRAIT_SEPARATOR))
    asked = [(key.split(':', 1)[1], value) for key, value in group.items()
             if key.startswith('trait:')]
    missing = sorted(trait for trait, value in asked
                     if value == 'required' and trait not in offered)
    if missing:
        return ('resource provider %s lacks the trait %s the request group '
                'requires' % (row['device_rp_uuid'], ', '.join(missing)))
    present = sorted(trait for trait, value in asked
                     if value == 'forbidden' and trait in offered)
    if present:
        return ('resource provider %s has the trait %s the request group '
                'forbids' % (row['device_rp_uuid'], ', '.join(present)))
    return None


def _may_program(claimed, row, item, resolved):
    """Whether the ARQ goes on to take a handle: yes when it asks for no
    programming or its request allows it (``bind_programming.choose``);
    no when it is set aside (first pass) or fails."""
    request = bind_programming.request_of(item.request_group)
    if request is None:
        return True
    if resolved is None:
        claimed.pending.append(bind_programming.Pending(
            row['id'], row['uuid'], request,
            bind_programming.Region.of_row(row)))
        return False
    try:
        reason = bind_programming.choose(claimed.programming, row, item,
                                         request, resolved)
    except KeyError:
        claimed.retry(row, 'its request changed while Glance was asked')
        return False
    if reason is not None:
        claimed.fail(row, reason)
        return False
    return True


def _add_region_attributes(context, claimed):
    """Give the regions of the pending ARQs their attributes (one query)."""
    if not claimed.pending:
        return
    attributes = deployable_queries.attributes_of(
        context, {item.region.deployable_id for item in claimed.pending})
    claimed.pending = [dataclasses.replace(item, region=dataclasses.replace(
        item.region, attributes=attributes[item.region.deployable_id]))
        for item in claimed.pending]


def _reserve_regions(context, claimed, owner, now, resolved):
    """Fail the ARQs of regions other binds' ARQs hold, and take the
    programming lock of the regions left for ``owner``.

    :raises: AttachHandleRace when a lock was taken meanwhile.
    """
    programs = claimed.programming
    if not programs.images:
        return
    holders = queries.holders_of(context, list(programs.images),
                                 resolved.batch_arq_ids)
    for row, item, reason in bind_programming.refused_regions(programs,
                                                               holders):
        claimed.drop(row, item)
        claimed.fail(row, reason)
    if not programs.images:
        return
    taken = deployable_queries.lock_for_bind(
        context, list(programs.images), owner, now,
        bind_programming.lock_expiry(programs))
    if taken != len(programs.images):
        raise AttachHandleRace()


def _free_handles(context, deployable_ids):
    """The free attach handles of the deployables, locked, by deployable id.

    A handle marked free that an ARQ holds anyway is left out (and logged).
    """
    free = collections.defaultdict(list)
    if not deployable_ids:
        return free
    handles = attach_handles.lock_free(context, deployable_ids)
    held = {handle['id'] for handle in handles if handle['held']}
    if held:
        LOG.warning('Attach handles %s are marked free but ARQs hold '
                    'them; skipped', sorted(held))
    for handle in handles:
        if handle['id'] not in held:
            free[handle['deployable_id']].append(handle)
    return free


def _assign_free_handles(context, claimed, now):
    """Give each waiting ARQ a free handle of its deployable and take them.

    Returns ``{arq_id: (attach_handle_id, deployable_id)}``; an ARQ its
    deployable has no handle left for fails.

    :raises: AttachHandleRace when a handle was taken meanwhile.
    """
    free = _free_handles(context, list(claimed.waiting))
    assignments = {}
    for deployable_id, entries in claimed.waiting.items():
        handles = free[deployable_id]
        for index, (row, item) in enumerate(entries):
            if index >= len(handles):
                claimed.fail(row, 'deployable %s has no free attach handle'
                             % row['deployable_name'])
                continue
            handle = handles[index]
            item.attach_handle_id = handle['id']
            item.attach_type = handle['attach_type']
            item.attach_info = json.loads(handle['attach_info'])
            item.attach_handle_taken_at = now
            assignments[row['id']] = (handle['id'], deployable_id)
            claimed.work.append(item)
    taken = attach_handles.take(
        context, [handle_id for handle_id, _ in assignments.values()], now)
    if taken != len(assignments):
        raise AttachHandleRace()
    return assignments
