"""ARQ workflows of the conductor: create, record a bind, unbind, delete.

Each is one write transaction whose number of SQL statements does not
depend on how many ARQs it touches, and whose state changes are
compare-and-set UPDATEs guarded by the states ``vocabulary.ARQState`` allows
them from, their row counts checked. Callers other than admins and the
service role act only on their own project's ARQs
(``cyborg.policies.arq``); the others look missing (404).
"""

import collections
import logging
import typing

from oslo_utils import timeutils
from oslo_utils import uuidutils

from cyborg import exception
from cyborg import objects
from cyborg.conductor import bind_transactions
from cyborg.conductor import history
from cyborg.conductor import quota
from cyborg.db import api as db_api
from cyborg.db.queries import arq_binding as binding_queries
from cyborg.db.queries import arqs as arq_queries
from cyborg.db.queries import history as history_queries
from cyborg.objects import arq_binding
from cyborg.common import vocabulary
from cyborg.policies import arq as arq_policies

LOG = logging.getLogger(__name__)

STATES = vocabulary.ARQState


def arqs_per_group(groups):
    """How many ARQs each group of a profile asks for.

    The sum of the integer values of the group's ``resources:*`` keys; a
    Xilinx FPGA group is not doubled (Nova does not double its count).

    :raises: Invalid (400) for a value that is not an integer
    """
    return [sum(quota.resource_classes(group, index).values())
            for index, group in enumerate(groups)]


def create(context, device_profile_name, device_profile_group_id=None,
           quotas=None):
    """Create the ARQs of a device profile in state Initial; return them.

    One ARQ per accelerator of each group (``arqs_per_group``), or of the
    group ``device_profile_group_id`` only, all in one transaction; the
    ARQs belong to the caller's project. ``quotas`` (a ``quota.Quotas``)
    limits the accelerators of each resource class the project's ARQs
    hold.

    :raises: ResourceNotFound (404) for an unknown or empty profile name;
        Invalid (400) for a group index out of range or a profile asking
        for no accelerator; QuotaExceeded (403) for ARQs past a limit.
        Nothing is created then.
    """
    if not isinstance(device_profile_name, str) or not device_profile_name:
        raise exception.ResourceNotFound(resource='DeviceProfile', key='name',
                                         value=device_profile_name)
    # Read from Keystone before the transaction, not while it holds locks.
    limits = quotas.limits_for(context.project_id) if quotas else {}
    created, deltas = _create_rows(context, device_profile_name,
                                   device_profile_group_id, limits)
    if deltas:
        _recheck_quota(context, created, limits, deltas)
    LOG.info('ARQs created from device profile %s: %s', device_profile_name,
             ', '.join(arq.uuid for arq in created))
    return created


@db_api.writer
def _create_rows(context, device_profile_name, group_id, limits):
    """Insert the ARQs; return them and the limited quota deltas."""
    profile = objects.DeviceProfile.get_by_name(context, device_profile_name)
    counts = arqs_per_group(profile.groups)
    if group_id is not None:
        if isinstance(group_id, bool) or not isinstance(group_id, int) or \
                not 0 <= group_id < len(counts):
            raise exception.Invalid(
                reason='device_profile_group_id must be a group index from 0 '
                       'to %d of device profile %s, not %r'
                       % (len(counts) - 1, device_profile_name, group_id))
        wanted = [(group_id, counts[group_id])]
    else:
        wanted = list(enumerate(counts))
    values = [{'uuid': uuidutils.generate_uuid(),
               'state': STATES.INITIAL,
               'device_profile_id': profile.id,
               'device_profile_group_id': index,
               'project_id': context.project_id,
               'created_at': timeutils.utcnow()}
              for index, count in wanted for _ in range(count)]
    if not values:
        raise exception.Invalid(
            reason='device profile %s asks for no accelerator%s'
                   % (device_profile_name,
                      '' if group_id is None else ' in group %d' % group_id))
    deltas = collections.Counter()
    for index, count in wanted:
        deltas.update(quota.arq_classes(profile.groups[index], count))
    deltas = quota.limited(limits, deltas)
    if deltas:
        quota.enforce(limits, deltas,
                      quota.arq_usage(context, context.project_id))
    created = [objects.ARQ._from_result(context, row)
               for row in arq_queries.create_many(context, values)]
    return created, deltas


def _recheck_quota(context, created, limits, deltas):
    """Nova's re-check, after the commit: a request that committed at the
    same time may have taken the last units too; then delete the ARQs."""
    try:
        quota.enforce_again(limits, deltas,
                            quota.arq_usage(context, context.project_id))
    except exception.QuotaExceeded:
        _destroy_created(context, [arq.id for arq in created])
        raise


@db_api.writer
def _destroy_created(context, arq_ids):
    arq_queries.destroy_many(context, arq_ids, timeutils.utcnow())


def _locked(context, uuids):
    """The ARQs of ``uuids`` locked, by uuid; 404 naming the first missing."""
    rows = arq_queries.lock_arqs(context, uuids=uuids,
                                 project_id=arq_policies.owner_filter(context))
    found = {row['uuid']: row for row in rows}
    for uuid in uuids:
        if uuid not in found:
            raise arq_policies.not_found(uuid)
    return found


def _check_states(found, allowed, action):
    """409 naming the first ARQ whose state does not allow ``action``."""
    for uuid in sorted(found):
        state = found[uuid]['state']
        if state not in allowed:
            raise exception.Conflict(
                'Cannot %s ARQ %s in state %s; allowed from %s.'
                % (action, uuid, state, ', '.join(allowed)))


def _check_uuids(arq_uuids):
    if not isinstance(arq_uuids, (list, tuple, set)) or not arq_uuids or \
            not all(uuidutils.is_uuid_like(uuid) for uuid in arq_uuids):
        raise exception.Invalid(reason='arq_uuids must be a non-empty list '
                                       'of ARQ uuids, not %r' % (arq_uuids,))
    return list(dict.fromkeys(arq_uuids))


class Recorded(typing.NamedTuple):
    """A bind ``record_bind`` recorded: its ARQ uuids (sorted), what the
    recording transaction claimed (a ``bind_transactions.Claimed``, or None
    when it claimed nothing), and whether it was a repeat of a bind
    recorded before (then nothing changed and there is nothing to bind)."""

    arq_uuids: list
    claimed: object = None
    repeated: bool = False


def record_bind(context, bindings, *, lease=None, claim=None):
    """Record ``bindings`` as BindStarted in one transaction; return Recorded.

    ``bindings`` maps each ARQ uuid to a dict of ``hostname``,
    ``device_rp_uuid``, ``instance_uuid`` and optionally ``project_id``
    (admins only). With ``lease`` (a ``bind_transactions.Lease``) the ARQs
    are leased to its owner in the same statement; with ``claim`` too (the
    binder's ``claim_for_recording``) the same transaction claims them, so
    that the binder's first step after the commit is the agent call.

    A repeat of a bind already recorded (every ARQ BindStarted or Bound
    with exactly these bindings: the client's retry of a request whose
    answer it lost) changes nothing and returns ``repeated``: the caller
    answers as to the first and starts no second bind.

    :raises: Invalid (400) for a malformed binding or an instance that has
        other ARQs bound already; PolicyNotAuthorized (403) for a project_id
        set by a non-admin; ResourceNotFound (404) for an unknown ARQ;
        Conflict (409) for an ARQ in a state a bind may not start from
        (BindStarted or Bound with another binding among them). Nothing
        changes then.
    """
    bindings = _check_bindings(context, bindings)
    try:
        claimed = _record_binds(context, bindings, lease, claim)
    except bind_transactions.AttachHandleRace:
        # Another binder took a handle between the claim's locking read and
        # its compare-and-set, and the whole transaction was rolled back:
        # record the bind alone; the binder claims it again.
        LOG.debug('Attach handles of ARQs %s were taken meanwhile; the '
                  'bind is recorded without its claim', sorted(bindings))
        claimed = _record_binds(context, bindings, None, None)
    described = ', '.join(
        '%s to instance %s on %s' % (uuid, binding['instance_uuid'],
                                     binding['hostname'])
        for uuid, binding in sorted(bindings.items()))
    if claimed is _REPEATED:
        LOG.info('Bind repeated, recorded already; nothing changed: %s',
                 described)
        return Recorded(sorted(bindings), None, repeated=True)
    LOG.info('Binds recorded: %s', described)
    return Recorded(sorted(bindings), claimed)


def _check_bindings(context, bindings):
    """``bindings`` validated as the API validates them, for any RPC caller.

    The API has checked them already (``cyborg.api.schemas.arqs``); other
    callers get the same 400s and the same 403 for a project_id set by a
    non-admin.
    """
    checked = arq_binding.checked_all(bindings)
    arq_policies.check_project_ids(context, checked)
    return checked


# What _record_binds returns for a repeat of a recorded bind.
_REPEATED = object()


def _is_repeat(found, bindings):
    """Whether every ARQ of ``found`` (locked rows) is recorded for, or
    Bound by, exactly its binding of ``bindings`` (``project_id`` when the
    binding names one)."""
    for uuid, row in found.items():
        binding = bindings[uuid]
        if row['state'] not in STATES.HOLDING or any(
                row[name] != value for name, value in binding.items()):
            return False
    return True


@db_api.writer
def _record_binds(context, bindings, lease, claim):
    """Record the bind, leased under ``lease`` when given, and run
    ``claim`` (when given, with ``lease``) in the same transaction; return
    its claim, or None; ``_REPEATED`` (nothing written) for a repeat."""
    found = _locked(context, list(bindings))
    if _is_repeat(found, bindings):
        return _REPEATED
    _check_states(found, STATES.BIND_FROM, 'bind')
    instances = {binding['instance_uuid'] for binding in bindings.values()}
    others = arq_queries.bound_to_instances(
        context, instances, STATES.HOLDING,
        [row['id'] for row in found.values()])
    if others:
        raise exception.Invalid(
            reason='instance %s already has ARQs bound: %s'
                   % (others[0]['instance_uuid'],
                      ', '.join(row['uuid'] for row in others)))
    by_id = {found[uuid]['id']: binding for uuid, binding in bindings.items()}
    now = timeutils.utcnow()
    changed = arq_queries.start_binds(
        context, by_id, STATES.BIND_FROM, now,
        lease=None if lease is None else lease.taken_at(now),
        requester=history.who(context))
    if changed != len(by_id):
        # Another bind or an unbind changed one of them meanwhile.
        raise exception.Conflict(
            'ARQs %s changed state during the bind; nothing was bound.'
            % ', '.join(sorted(bindings)))
    if lease is None or claim is None:
        return None
    return claim(context, sorted(bindings), now=now)


def unbind(context, arq_uuids, releaser=None):
    """Unbind ARQs and free their attach handles in one transaction.

    Then ``releaser`` (a ``releasing.Releaser``), when given, has the
    agents give back what they prepared for those handles; its failures
    are logged, the unbind stands.

    :raises: ResourceNotFound (404) for an unknown ARQ; Conflict (409) for
        an ARQ in a state it cannot be unbound from (or that changed state
        meanwhile). Nothing changes then.
    """
    uuids = _check_uuids(arq_uuids)
    held = _unbind_rows(context, uuids)
    LOG.info('ARQs unbound: %s', ', '.join(uuids))
    _release(context, releaser, held)


@db_api.writer
def _unbind_rows(context, uuids):
    """Unbind the ARQs; return the handles they held (``handles_held_by``)."""
    found = _locked(context, uuids)
    _check_states(found, STATES.UNBIND_FROM, 'unbind')
    held = _held_handles(context, found)
    ids = [row['id'] for row in found.values()]
    now = timeutils.utcnow()
    _record_history(context, found, history.EVENTS.UNBIND, now)
    changed = arq_queries.unbind_many(context, ids, STATES.UNBIND_FROM, now)
    if changed != len(ids):
        raise exception.Conflict(
            'ARQs %s changed state during the unbind; nothing was unbound.'
            % ', '.join(uuids))
    return held


def _held_handles(context, found):
    """What the ARQs of ``found`` (locked rows) hold, read before it is
    freed: one query, and none when no ARQ holds a handle."""
    holding = [row['id'] for row in found.values()
               if row['attach_handle_id'] is not None]
    return binding_queries.handles_held_by(context, holding)


def _release(context, releaser, held):
    """Have the agents release ``held``, after the commit; never raises."""
    if releaser is None or not held:
        return
    try:
        releaser.release(context, held)
    except Exception:
        LOG.exception('Releasing attach handles %s failed',
                      ', '.join(row['arq_uuid'] for row in held))


def delete(context, arq_uuids=None, instance_uuid=None, releaser=None):
    """Delete ARQs, unbinding bound ones first, in one transaction.

    Exactly one of ``arq_uuids`` (all or nothing) and ``instance_uuid``
    (every ARQ of the instance; none is not an error). The attach handles
    of the deleted ARQs are freed, then released as ``unbind`` does.

    :raises: Invalid (400) for both or neither; ResourceNotFound (404) for
        an unknown uuid among ``arq_uuids``; NotAuthorized (403) for Bound
        ARQs and a caller without a service token. Nothing is deleted then.
    """
    if (arq_uuids is None) == (instance_uuid is None):
        raise exception.Invalid(
            reason='give either ARQ uuids or an instance uuid, not both or '
                   'neither')
    if arq_uuids is not None:
        uuids = _check_uuids(arq_uuids)
    elif not uuidutils.is_uuid_like(instance_uuid):
        raise exception.Invalid(reason='instance must be a UUID, not %r'
                                       % (instance_uuid,))
    else:
        uuids = None
    deleted, held = _delete_rows(context, uuids, instance_uuid)
    LOG.info('ARQs deleted: %s', ', '.join(deleted) or 'none')
    _release(context, releaser, held)


@db_api.writer
def _delete_rows(context, uuids, instance_uuid):
    if uuids is not None:
        found = _locked(context, uuids)
    else:
        found = {row['uuid']: row for row in arq_queries.lock_arqs(
            context, instance_uuid=instance_uuid,
            project_id=arq_policies.owner_filter(context))}
    bound = sorted(uuid for uuid, row in found.items()
                   if row['state'] == STATES.BOUND)
    if bound and not context.has_service_token:
        raise exception.NotAuthorized(
            'Deleting Bound ARQs (%s) requires a service token. Use the '
            'Compute API to manage instance accelerators.' % ', '.join(bound))
    held = _held_handles(context, found)
    if found:
        now = timeutils.utcnow()
        _record_history(context, found, history.EVENTS.DELETE, now)
        arq_queries.destroy_many(context, [row['id'] for row in found.values()],
                                 now)
    return sorted(found), held


def _record_history(context, found, event, now):
    """Append ``event`` to the history of the deployables the ARQs of
    ``found`` (locked rows) hold, before they let go: one statement, none
    when no ARQ holds one."""
    holding = [row['id'] for row in found.values()
               if row['state'] in STATES.HOLDING]
    history_queries.append_for_arqs(context, holding, event, now,
                                    history.who(context))
