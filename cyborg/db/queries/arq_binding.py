"""Set-based statements of a bind: its leases, the claim's reads, the end
of binds and the Nova events owed.

Each function touches all the ARQs or attach handles it is given in one
statement, so a bind of N ARQs costs the statements of a bind of one.
While an ARQ is in BindStarted these statements leave its ``updated_at``
as it is: it keeps the moment the bind was recorded, from which
``[conductor] bind_timeout`` counts.
"""

import sqlalchemy as sa

from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.db.queries import placement as placement_queries
from cyborg.common import vocabulary

ARQ = models.ARQ.__table__
AttachHandle = models.AttachHandle.__table__
Attribute = models.Attribute.__table__
Deployable = models.Deployable.__table__
Device = models.Device.__table__
DeviceProfile = models.DeviceProfile.__table__

BIND_STARTED = vocabulary.ARQState.BIND_STARTED
# Joins a deployable's traits in one column (trait names have no spaces).
TRAIT_SEPARATOR = ' '


def _bind_started_at():
    """When the bind was recorded: the last change before BindStarted."""
    return sa.func.coalesce(ARQ.c.updated_at, ARQ.c.created_at)


def _keep_updated_at():
    # Bookkeeping is not a change of the ARQ: keep the bind's start time.
    return {'updated_at': ARQ.c.updated_at}


# Built once, with bound parameters: the binder runs these on every bind,
# and building and hashing a statement anew costs more CPU than the
# database takes to run it.
_TAKE_LEASES = sa.update(ARQ).where(
    ARQ.c.uuid.in_(sa.bindparam('uuids', expanding=True)),
    ARQ.c.state == BIND_STARTED,
    sa.or_(ARQ.c.bind_owner.is_(None),
           ARQ.c.bind_owner == sa.bindparam('owner'),
           ARQ.c.bind_lease_expires_at < sa.bindparam('now')),
).values(bind_owner=sa.bindparam('owner'),
         bind_lease_expires_at=sa.bindparam('expires_at'),
         **_keep_updated_at())
_RENEW_LEASES = sa.update(ARQ).where(
    ARQ.c.uuid.in_(sa.bindparam('uuids', expanding=True)),
    ARQ.c.bind_owner == sa.bindparam('owner'),
    ARQ.c.state == BIND_STARTED,
).values(bind_lease_expires_at=sa.bindparam('expires_at'),
         **_keep_updated_at())
_RELEASE_LEASES = sa.update(ARQ).where(
    ARQ.c.uuid.in_(sa.bindparam('uuids', expanding=True)),
    ARQ.c.bind_owner == sa.bindparam('owner'),
).values(bind_owner=None, bind_lease_expires_at=None, **_keep_updated_at())
# As Placement has them (queries.placement.provider_sources_of_host):
# the newest top-level ``rc`` attribute, the top-level ``trait*`` ones.
_RESOURCE_CLASS = sa.select(Attribute.c.value).where(
    Attribute.c.deployable_id == Deployable.c.id,
    Attribute.c.key == placement_queries.RESOURCE_CLASS_KEY,
    Attribute.c.parent_attribute_id.is_(None),
).order_by(Attribute.c.id.desc()).limit(1).scalar_subquery()
_TRAITS = sa.select(sa.func.aggregate_strings(
    Attribute.c.value, TRAIT_SEPARATOR)).where(
    Attribute.c.deployable_id == Deployable.c.id,
    Attribute.c.key.startswith(placement_queries.TRAIT_KEY_PREFIX),
    Attribute.c.parent_attribute_id.is_(None),
    Attribute.c.value.is_not(None),
).scalar_subquery()
# The earliest drain of a deployable's parent or root (NULL: neither is
# drained): a drain of a region's parent takes the region out too.
_ABOVE = Deployable.alias('above_deployable')
_ABOVE_DRAIN_SINCE = sa.select(sa.func.min(_ABOVE.c.drain_since)).where(
    _ABOVE.c.id.in_((Deployable.c.parent_id, Deployable.c.root_id)),
).scalar_subquery()
_LEASED_ARQS = sa.select(
    ARQ,
    DeviceProfile.c.profile_json,
    Deployable.c.id.label('deployable_row_id'),
    Deployable.c.name.label('deployable_name'),
    Deployable.c.driver_name.label('deployable_driver_name'),
    Deployable.c.bitstream_id.label('deployable_bitstream_id'),
    _RESOURCE_CLASS.label('deployable_rc'),
    _TRAITS.label('deployable_traits'),
    Device.c.hostname.label('device_hostname'),
    Device.c.status.label('device_status'),
    Device.c.drain_since.label('device_drain_since'),
    Deployable.c.drain_since.label('deployable_drain_since'),
    _ABOVE_DRAIN_SINCE.label('above_drain_since'),
    Device.c.type.label('device_type'),
    Device.c.vendor.label('device_vendor'),
    Device.c.model.label('device_model'),
    Device.c.vendor_board_info.label('device_vendor_board_info'),
    AttachHandle.c.uuid.label('attach_handle_uuid'),
    AttachHandle.c.attach_type.label('attach_handle_type'),
    AttachHandle.c.attach_info.label('attach_handle_info'),
    AttachHandle.c.deployable_id.label('attach_handle_deployable_id'),
    AttachHandle.c.updated_at.label('attach_handle_updated_at'),
).join(
    DeviceProfile, ARQ.c.device_profile_id == DeviceProfile.c.id
).outerjoin(
    Deployable, Deployable.c.rp_uuid == ARQ.c.device_rp_uuid
).outerjoin(
    Device, Device.c.id == Deployable.c.device_id
).outerjoin(
    AttachHandle, AttachHandle.c.id == ARQ.c.attach_handle_id
).where(
    ARQ.c.uuid.in_(sa.bindparam('uuids', expanding=True)),
    ARQ.c.bind_owner == sa.bindparam('owner'),
    ARQ.c.state == BIND_STARTED,
).order_by(ARQ.c.id)
_LOCK_ARQS_OF_INSTANCES = sa.select(
    ARQ.c.id, ARQ.c.uuid, ARQ.c.state, ARQ.c.instance_uuid,
    ARQ.c.attach_handle_id, ARQ.c.bind_owner, ARQ.c.bind_event_pending,
    ARQ.c.bind_lease_expires_at, ARQ.c.created_at, ARQ.c.updated_at,
).where(sa.or_(
    ARQ.c.id.in_(sa.bindparam('ids', expanding=True)),
    ARQ.c.instance_uuid.in_(sa.bindparam('instance_uuids', expanding=True)),
)).order_by(ARQ.c.id).with_for_update()
_LEASE_EVENTS = sa.update(ARQ).where(
    ARQ.c.id.in_(sa.bindparam('ids', expanding=True)),
    ARQ.c.state != BIND_STARTED,
).values(bind_owner=sa.bindparam('owner'),
         bind_lease_expires_at=sa.bindparam('expires_at'))
_CLEAR_EVENTS_PENDING = sa.update(ARQ).where(
    ARQ.c.uuid.in_(sa.bindparam('uuids', expanding=True)),
    ARQ.c.state != BIND_STARTED,
    ARQ.c.bind_owner == sa.bindparam('owner'),
    ARQ.c.bind_lease_expires_at == sa.bindparam('expires_at'),
).values(bind_event_pending=None, bind_owner=None,
         bind_lease_expires_at=None)


@db_api.writer
def take_leases(context, arq_uuids, owner, lease_expires_at, now):
    """Lease the ARQs of ``arq_uuids`` still in BindStarted to ``owner``.

    An ARQ is taken when nobody holds it, ``owner`` already does, or its
    lease expired. Returns how many were taken; ``leased_arqs`` says which.
    """
    if not arq_uuids:
        return 0
    return context.session.connection().execute(_TAKE_LEASES, {
        'uuids': sorted(arq_uuids), 'owner': owner,
        'expires_at': lease_expires_at, 'now': now}).rowcount


@db_api.writer
def renew_leases(context, arq_uuids, owner, lease_expires_at):
    """Extend ``owner``'s leases of these ARQs while they are in BindStarted."""
    if not arq_uuids:
        return 0
    return context.session.connection().execute(_RENEW_LEASES, {
        'uuids': sorted(arq_uuids), 'owner': owner,
        'expires_at': lease_expires_at}).rowcount


@db_api.writer
def release_leases(context, arq_uuids, owner):
    """Give up ``owner``'s leases of these ARQs, whatever their state."""
    if not arq_uuids:
        return 0
    return context.session.connection().execute(_RELEASE_LEASES, {
        'uuids': sorted(arq_uuids), 'owner': owner}).rowcount


@db_api.reader
def leased_arqs(context, arq_uuids, owner):
    """The ARQs of ``arq_uuids`` in BindStarted leased to ``owner``, in one query.

    Each row has the ARQ's columns, its profile's ``profile_json``, the
    deployable whose provider is ``device_rp_uuid`` (``deployable_*``, None
    when no deployable has that provider), that deployable's device
    (``device_hostname``, ``device_status``, ``device_type``, the drain
    marks of the device, the deployable and the earliest of its parent's
    and root's: ``device_drain_since``, ``deployable_drain_since``,
    ``above_drain_since``, and, for
    matching a bitstream, ``device_vendor``, ``device_model``,
    ``device_vendor_board_info``), the deployable's resource class (its
    ``rc`` attribute: ``deployable_rc``, and its ``trait*`` attributes
    values joined by TRAIT_SEPARATOR: ``deployable_traits``, both in the
    same statement) and the
    attach handle the ARQ already holds (``attach_handle_*``, None when it
    holds none; its ``attach_handle_updated_at`` is when the ARQ took it).
    """
    if not arq_uuids:
        return []
    return context.session.connection().execute(_LEASED_ARQS, {
        'uuids': sorted(arq_uuids), 'owner': owner}).mappings().all()


@db_api.writer
def assign_attach_handles(context, assignments, owner):
    """Record an attach handle and deployable on each ARQ, in one statement.

    ``assignments`` maps an ARQ id to ``(attach_handle_id, deployable_id)``;
    only ARQs still in BindStarted and leased to ``owner`` change. Returns
    how many did.
    """
    if not assignments:
        return 0
    handles = sa.case({arq_id: handle_id for arq_id, (handle_id, _)
                       in assignments.items()}, value=ARQ.c.id)
    deployables = sa.case({arq_id: deployable_id for arq_id, (_, deployable_id)
                           in assignments.items()}, value=ARQ.c.id)
    statement = sa.update(ARQ).where(
        ARQ.c.id.in_(sorted(assignments)),
        ARQ.c.bind_owner == owner,
        ARQ.c.state == BIND_STARTED,
    ).values(attach_handle_id=handles, deployable_id=deployables,
             **_keep_updated_at())
    return context.session.connection().execute(statement).rowcount


@db_api.writer
def lock_arqs_of_instances(context, arq_ids, instance_uuids):
    """The ARQs with these ids or of these instances, locked until commit.

    Locking every ARQ of the instances makes the binders that finish ARQs
    of one instance take turns, so exactly one of them sees the last ARQ
    leave BindStarted and sends Nova the instance's events.
    """
    if not arq_ids and not instance_uuids:
        return []
    # An empty list matches nothing (an expanding IN renders it so).
    return context.session.connection().execute(_LOCK_ARQS_OF_INSTANCES, {
        'ids': sorted(arq_ids or ()),
        'instance_uuids': sorted(instance_uuids or ())}).mappings().all()


@db_api.writer
def end_binds(context, arq_ids, state, now, *, release_attach_handle=False,
              reasons=None, event_lease=None, events_owed=True):
    """Move ARQs out of BindStarted to ``state``, owing Nova their event.

    Only ARQs still in BindStarted change; their bind lease ends. With
    ``release_attach_handle`` the ARQs also let go of their attach handle
    (the caller frees the handles themselves). ``reasons`` maps ARQ ids to
    the ``state_reason`` to record (cut at 255 characters); the others get
    none. ``event_lease`` (``(owner, expires_at, arq_ids)``) leases the
    events of those of the ARQs to their sender in the same statement, as
    ``lease_events`` would after it; without ``events_owed`` (nobody to
    tell: Nova is not configured) no event is owed at all. Returns how
    many changed.
    """
    if not arq_ids:
        return 0
    reasons = {arq_id: _reason_text(reason)
               for arq_id, reason in (reasons or {}).items() if reason}
    values = {'state': state, 'bind_owner': None,
              'bind_lease_expires_at': None,
              'bind_event_pending': True if events_owed else None,
              'updated_at': now,
              'state_reason': sa.case(reasons, value=ARQ.c.id, else_=None)
              if reasons else None}
    if events_owed and event_lease is not None:
        owner, expires_at, leased_ids = event_lease
        leased = sorted(set(leased_ids) & set(arq_ids))
        if leased:
            told = ARQ.c.id.in_(leased)
            values['bind_owner'] = sa.case((told, owner), else_=None)
            values['bind_lease_expires_at'] = sa.case((told, expires_at),
                                                      else_=None)
    if release_attach_handle:
        values['attach_handle_id'] = None
    statement = sa.update(ARQ).where(
        ARQ.c.id.in_(sorted(arq_ids)),
        ARQ.c.state == BIND_STARTED,
    ).values(**values)
    return context.session.connection().execute(statement).rowcount


def _reason_text(reason):
    """``reason`` as it fits ``state_reason``."""
    text = str(reason)
    limit = models.ARQ.state_reason.type.length
    return text if len(text) <= limit else text[:limit - 3] + '...'


@db_api.reader
def holders_of(context, deployable_ids, excluded_arq_ids):
    """``{deployable id: [ARQ uuid, ...]}``: the ARQs in HOLDING that hold
    these deployables (by ``deployable_id`` or by an attach handle of
    theirs), but those of ``excluded_arq_ids``, in one query."""
    if not deployable_ids:
        return {}
    ids = sorted(deployable_ids)
    of_handle = sa.select(AttachHandle.c.deployable_id).where(
        AttachHandle.c.id == ARQ.c.attach_handle_id).scalar_subquery()
    holder = sa.func.coalesce(ARQ.c.deployable_id, of_handle)
    query = sa.select(ARQ.c.uuid, holder.label('holder')).where(
        ARQ.c.state.in_(vocabulary.ARQState.HOLDING),
        sa.or_(ARQ.c.deployable_id.in_(ids),
               ARQ.c.attach_handle_id.in_(sa.select(AttachHandle.c.id).where(
                   AttachHandle.c.deployable_id.in_(ids)))),
        ARQ.c.id.not_in(sorted(excluded_arq_ids)),
    ).order_by(ARQ.c.id)
    found = {}
    for arq_uuid, deployable_id in context.session.execute(query):
        found.setdefault(deployable_id, []).append(arq_uuid)
    return found


@db_api.reader
def handles_held_by(context, arq_ids):
    """What the agents must give back for these ARQs' attach handles, in one
    query: per ARQ holding a handle, ``arq_uuid``, the handle's host
    (``hostname``), ``driver_name`` and ``deployable_name`` of its
    deployable, ``attach_type``, ``attach_info`` (JSON text) and
    ``taken_at`` (the handle's ``updated_at``: when the ARQ took it)."""
    if not arq_ids:
        return []
    query = sa.select(
        ARQ.c.uuid.label('arq_uuid'),
        Device.c.hostname.label('hostname'),
        Deployable.c.driver_name.label('driver_name'),
        Deployable.c.name.label('deployable_name'),
        AttachHandle.c.attach_type.label('attach_type'),
        AttachHandle.c.attach_info.label('attach_info'),
        AttachHandle.c.updated_at.label('taken_at'),
    ).join(
        AttachHandle, AttachHandle.c.id == ARQ.c.attach_handle_id
    ).join(
        Deployable, Deployable.c.id == AttachHandle.c.deployable_id
    ).join(
        Device, Device.c.id == Deployable.c.device_id
    ).where(ARQ.c.id.in_(sorted(arq_ids))).order_by(ARQ.c.id)
    return [dict(row) for row in context.session.execute(query).mappings()]


@db_api.writer
def lease_events(context, arq_ids, owner, expires_at):
    """Record that ``owner`` is sending Nova the events of these ARQs.

    Until ``expires_at`` no sweep sends them; if they are still pending
    then (the sender died or Nova could not be reached), a sweep does.
    """
    if not arq_ids:
        return 0
    return context.session.connection().execute(_LEASE_EVENTS, {
        'ids': sorted(arq_ids), 'owner': owner,
        'expires_at': expires_at}).rowcount


@db_api.writer
def clear_events_pending(context, arq_uuids, owner, lease_expires_at):
    """Record that Nova was given the events of these ARQs (by uuid), sent
    under the lease ``lease_events`` gave ``owner`` until
    ``lease_expires_at``.

    An ARQ whose event lease is another (a sweep took the event over, or
    the ARQ was bound again and owes Nova a new event) keeps its event.
    """
    if not arq_uuids:
        return 0
    return context.session.connection().execute(_CLEAR_EVENTS_PENDING, {
        'uuids': sorted(arq_uuids), 'owner': owner,
        'expires_at': lease_expires_at}).rowcount


@db_api.reader
def binds_started_before(context, cutoff):
    """Id, uuid, instance_uuid, created_at and updated_at of the ARQs in
    BindStarted since before ``cutoff``."""
    query = sa.select(ARQ.c.id, ARQ.c.uuid, ARQ.c.instance_uuid,
                      ARQ.c.created_at, ARQ.c.updated_at).where(
        ARQ.c.state == BIND_STARTED,
        _bind_started_at() < cutoff,
    ).order_by(ARQ.c.id)
    return [dict(row) for row in context.session.execute(query).mappings()]


@db_api.reader
def orphaned_binds(context, now, unowned_since):
    """(uuid, instance_uuid) of the ARQs in BindStarted no live binder works on.

    That is: their lease expired, or nobody leased them and they were
    recorded before ``unowned_since`` (younger ones are probably on their
    way to the binder they were submitted to).
    """
    query = sa.select(ARQ.c.uuid, ARQ.c.instance_uuid).where(
        ARQ.c.state == BIND_STARTED,
        sa.or_(ARQ.c.bind_lease_expires_at < now,
               sa.and_(ARQ.c.bind_owner.is_(None),
                       _bind_started_at() < unowned_since)),
    ).order_by(ARQ.c.id)
    return [tuple(row) for row in context.session.execute(query)]


@db_api.reader
def instances_owed_events(context, now):
    """Instances with an ARQ whose event Nova still has to get and nobody is
    sending (no unexpired lease), none of whose ARQs is binding."""
    pending = ARQ.alias('pending')
    binding = sa.select(ARQ.c.id).where(
        ARQ.c.state == BIND_STARTED,
        ARQ.c.instance_uuid == pending.c.instance_uuid)
    query = sa.select(pending.c.instance_uuid).where(
        pending.c.bind_event_pending == sa.true(),
        pending.c.instance_uuid.is_not(None),
        sa.or_(pending.c.bind_lease_expires_at.is_(None),
               pending.c.bind_lease_expires_at < now),
        ~sa.exists(binding),
    ).distinct()
    return sorted(context.session.scalars(query))
