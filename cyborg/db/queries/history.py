"""Queries of device_history: the append-only history of devices and
deployables.

Entries are only inserted (``append``, ``append_for_arqs``: one statement
each, however many entries) and, once older than the retention, deleted
in bounded batches (``prune_batch``). Nothing updates one.
"""

import sqlalchemy as sa

from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.db.queries import rows

HistoryEntry = models.HistoryEntry
TABLE = HistoryEntry.__table__
ARQ = models.ARQ.__table__
Deployable = models.Deployable.__table__
Device = models.Device.__table__
AttachHandle = models.AttachHandle.__table__

# Every column an entry is written with (``id`` is numbered by the
# database, ``updated_at`` stays NULL).
COLUMNS = tuple(name for name in TABLE.columns.keys()
                if name not in ('id', 'updated_at'))
# The columns a reader is given, in this order.
READ_COLUMNS = ('id',) + COLUMNS


def _cut(value, column):
    """``value`` as it fits the text ``column`` (None stays None)."""
    if value is None:
        return None
    text = str(value)
    limit = TABLE.c[column].type.length
    return text if len(text) <= limit else text[:limit - 3] + '...'


def normalized(entry):
    """``entry`` (a dict) with every column, too long texts cut."""
    row = {name: entry.get(name) for name in COLUMNS}
    for name in ('reason', 'user_id', 'project_id', 'request_id', 'agent',
                 'arq_project_id', 'image_hash'):
        row[name] = _cut(row[name], name)
    return row


@db_api.writer
def append(context, entries):
    """Insert ``entries`` (dicts of columns, ``created_at`` set) in one
    multi-row INSERT; nothing for none."""
    if not entries:
        return
    context.session.connection().execute(
        sa.insert(TABLE).values([normalized(entry) for entry in entries]))


def _arq_deployable_id():
    """The deployable an ARQ is on: its own, its attach handle's, or the
    one its resource provider names."""
    of_handle = sa.select(AttachHandle.c.deployable_id).where(
        AttachHandle.c.id == ARQ.c.attach_handle_id).scalar_subquery()
    of_provider = sa.select(Deployable.c.id).where(
        Deployable.c.rp_uuid == ARQ.c.device_rp_uuid).scalar_subquery()
    return sa.func.coalesce(ARQ.c.deployable_id, of_handle, of_provider)


def _who_columns(who, of_bind):
    """The entry's ``user_id``, ``project_id`` and ``request_id``: those
    of ``who``, or (``of_bind``) those the ARQ keeps of its bind's
    requester, ``who``'s where it keeps none."""
    columns = []
    for name in ('user_id', 'project_id', 'request_id'):
        value = sa.literal(_cut(who.get(name), name), TABLE.c[name].type)
        if of_bind:
            value = sa.func.coalesce(ARQ.c['bind_' + name], value)
        columns.append(value.label('by_' + name))
    return columns


@db_api.writer
def append_for_arqs(context, arq_ids, event, now, who, failed=None,
                    of_bind=False):
    """One entry of ``event`` for each ARQ of ``arq_ids`` on a deployable,
    in one INSERT ... SELECT, read before the ARQs change.

    ``who`` holds ``user_id``, ``project_id`` and ``request_id``; with
    ``of_bind`` (the end of a bind) each entry names instead who asked
    for the ARQ's bind, as the ARQ keeps it (``bind_user_id`` ...), and
    ``who`` only where it keeps none. The ARQ's host is the entry's
    ``agent``. ``failed`` maps the ids of the ARQs whose change failed to
    why; the others are ``ok``. ARQs on no deployable (a bind refused
    before it found one) record nothing.
    """
    if not arq_ids:
        return
    failed = {arq_id: _cut(reason, 'reason')
              for arq_id, reason in (failed or {}).items()}
    outcome = sa.literal('ok')
    reason = sa.null()
    if failed:
        outcome = sa.case((ARQ.c.id.in_(sorted(failed)), 'failed'),
                          else_='ok')
        reason = sa.case(failed, value=ARQ.c.id, else_=None)
    arqs = sa.select(
        ARQ.c.uuid, ARQ.c.instance_uuid, ARQ.c.project_id, ARQ.c.hostname,
        _arq_deployable_id().label('deployable_id'),
        outcome.label('outcome'), reason.label('reason'),
        *_who_columns(who, of_bind),
    ).where(ARQ.c.id.in_(sorted(arq_ids))).subquery()
    select = sa.select(
        sa.literal(now, models.Timestamp).label('created_at'),
        Device.c.id, Deployable.c.id, Device.c.uuid, Deployable.c.uuid,
        sa.literal(event), arqs.c.outcome, arqs.c.reason, sa.null(),
        sa.null(), arqs.c.uuid, arqs.c.instance_uuid, arqs.c.project_id,
        arqs.c.by_user_id, arqs.c.by_project_id, arqs.c.by_request_id,
        arqs.c.hostname,
    ).select_from(arqs.join(
        Deployable, Deployable.c.id == arqs.c.deployable_id).join(
        Device, Device.c.id == Deployable.c.device_id))
    columns = ('created_at', 'device_id', 'deployable_id', 'device_uuid',
               'deployable_uuid', 'event', 'outcome', 'reason', 'image_id',
               'image_hash', 'arq_uuid', 'instance_uuid', 'arq_project_id',
               'user_id', 'project_id', 'request_id', 'agent')
    context.session.connection().execute(
        sa.insert(TABLE).from_select(columns, select))


# Why a bind's load of a region is recorded as failed.
UNKNOWN_LOAD = ('the load of a bind did not succeed: what the region holds '
                'is unknown')


@db_api.writer
def append_bind_loads(context, loads, event, now):
    """One ``event`` entry per region a bind loaded, in one INSERT ...
    SELECT: ``loads`` maps deployable ids to the image the region now
    holds (ok) or to None (failed: unknown). The agent is the region's
    host; no caller asked for the load itself (the bind's entry names
    who asked for the bind)."""
    if not loads:
        return
    failed = sorted(deployable_id for deployable_id, image in loads.items()
                    if image is None)
    images = {deployable_id: image for deployable_id, image in loads.items()
              if image is not None}
    outcome, reason = sa.literal('ok'), sa.null()
    if failed:
        outcome = sa.case((Deployable.c.id.in_(failed), 'failed'),
                          else_='ok')
        reason = sa.case((Deployable.c.id.in_(failed), UNKNOWN_LOAD),
                         else_=None)
    image = (sa.case(images, value=Deployable.c.id, else_=None)
             if images else sa.null())
    select = sa.select(
        sa.literal(now, models.Timestamp).label('created_at'),
        Device.c.id, Deployable.c.id, Device.c.uuid, Deployable.c.uuid,
        sa.literal(event), outcome, reason, image, Device.c.hostname,
    ).select_from(Deployable.join(
        Device, Device.c.id == Deployable.c.device_id)).where(
        Deployable.c.id.in_(sorted(loads)))
    columns = ('created_at', 'device_id', 'deployable_id', 'device_uuid',
               'deployable_uuid', 'event', 'outcome', 'reason', 'image_id',
               'agent')
    context.session.connection().execute(
        sa.insert(TABLE).from_select(columns, select))


@db_api.reader
def page(context, device_uuid=None, deployable_uuid=None,
         arq_project_id=None, limit=None, marker=None):
    """One page of the entries of a device or a deployable (exactly one of
    the two uuids), newest first.

    ``marker`` is the id of the last entry of the previous page; with
    ``arq_project_id`` only the entries of that project's ARQs. Two
    statements: the device or deployable must exist, then its page, rows
    of ``READ_COLUMNS``.

    :raises: cyborg.exception.ResourceNotFound for an unknown device or
        deployable
    """
    query = sa.select(*[TABLE.c[name] for name in READ_COLUMNS])
    if device_uuid is not None:
        rows.get_by(context, models.Device, 'uuid', device_uuid)
        query = query.where(TABLE.c.device_uuid == device_uuid)
    else:
        rows.get_by(context, models.Deployable, 'uuid', deployable_uuid)
        query = query.where(TABLE.c.deployable_uuid == deployable_uuid)
    if arq_project_id is not None:
        query = query.where(TABLE.c.arq_project_id == arq_project_id)
    if marker is not None:
        query = query.where(TABLE.c.id < marker)
    query = query.order_by(TABLE.c.id.desc())
    if limit is not None:
        query = query.limit(limit)
    return context.session.execute(query).all()


@db_api.writer
def prune_batch(context, before, size):
    """Delete at most ``size`` of the oldest entries created before
    ``before``, in one short transaction; return how many.

    Two statements: the ids of the batch, then a DELETE of those ids (not
    a LIMIT inside an IN subquery, which MariaDB refuses).
    """
    ids = list(context.session.connection().execute(
        sa.select(TABLE.c.id).where(TABLE.c.created_at < before)
        .order_by(TABLE.c.id).limit(size)).scalars())
    if not ids:
        return 0
    return context.session.connection().execute(
        sa.delete(TABLE).where(TABLE.c.id.in_(ids))).rowcount
