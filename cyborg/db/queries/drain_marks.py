"""Setting and clearing the drain mark (``drain_since``) of a device or a
deployable.

Each call is a compare-and-set UPDATE in the caller's transaction: a drain
sets ``drain_since`` only where it is NULL (draining twice keeps the first
time), an undrain clears it only where it is set. Then one SELECT reads
the target with what its history entry and the Placement sync need. The
state shown (``draining``/``drained``) is derived when read
(``cyborg.db.queries.drain``), never stored.
"""

import collections

import sqlalchemy as sa

from cyborg import exception
from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.db.queries import rows

DEVICE = 'device'
DEPLOYABLE = 'deployable'
KINDS = (DEVICE, DEPLOYABLE)

Device = models.Device.__table__
Deployable = models.Deployable.__table__

# What a drain or undrain touched: ids and uuids for the history entry,
# the host whose providers follow, whether the mark changed, and the mark.
Marked = collections.namedtuple('Marked', [
    'kind', 'changed', 'device_id', 'device_uuid', 'deployable_id',
    'deployable_uuid', 'hostname', 'drain_since'])


def _target(kind, uuid):
    """``(table, SELECT of the Marked columns)`` of ``kind`` ``uuid``."""
    if kind == DEVICE:
        return Device, sa.select(
            Device.c.id, Device.c.uuid, sa.null(), sa.null(),
            Device.c.hostname, Device.c.drain_since,
        ).where(Device.c.uuid == uuid)
    return Deployable, sa.select(
        Device.c.id, Device.c.uuid, Deployable.c.id, Deployable.c.uuid,
        Device.c.hostname, Deployable.c.drain_since,
    ).join(Device, Device.c.id == Deployable.c.device_id).where(
        Deployable.c.uuid == uuid)


@db_api.writer
def mark(context, kind, uuid, drain, now):
    """Drain (``drain`` True: ``drain_since`` = ``now`` unless already
    set) or undrain (clear it) the ``kind`` (device or deployable) with
    ``uuid``; return a Marked. Two statements, whatever the state.

    :raises: ResourceNotFound for an unknown uuid
    """
    if kind not in KINDS:
        raise exception.Invalid(reason='kind must be one of %s, not %r'
                                % (', '.join(KINDS), kind))
    table, select = _target(kind, uuid)
    if drain:
        update = sa.update(table).where(
            table.c.uuid == uuid, table.c.drain_since.is_(None)).values(
            drain_since=now)
    else:
        update = sa.update(table).where(
            table.c.uuid == uuid, table.c.drain_since.is_not(None)).values(
            drain_since=None)
    found = None
    changed = False
    if rows.storable(uuid):
        changed = bool(context.session.execute(update).rowcount)
        found = context.session.execute(select).first()
    if found is None:
        raise exception.ResourceNotFound(resource=kind.capitalize(),
                                         key='uuid', value=uuid)
    return Marked(kind, changed, *found)
