"""The count of healthy reports in a row of degraded devices and
deployables (``healthy_reports``), written in bulk by the conductor's
health policy (``cyborg.conductor.health``) in a report's transaction.

A change of health itself goes through ``cyborg.db.queries.health``, which
restarts the count; these two statements only move the count of rows that
stay degraded, one statement per table whatever the number of rows.
"""

import collections

import sqlalchemy as sa

from cyborg.common import vocabulary
from cyborg import exception
from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.db.queries import rows

_TABLES = {'device': models.Device.__table__,
           'deployable': models.Deployable.__table__}


@db_api.writer
def count_healthy(context, kind, row_ids):
    """One more healthy report for each degraded ``kind`` (``device`` or
    ``deployable``) of ``row_ids``; nothing for none."""
    if not row_ids:
        return
    table = _TABLES[kind]
    context.session.execute(
        sa.update(table).where(
            table.c.id.in_(sorted(row_ids)),
            table.c.health == vocabulary.Health.DEGRADED).values(
            healthy_reports=table.c.healthy_reports + 1))


@db_api.writer
def restart_counts(context, kind, row_ids):
    """Restart the count of healthy reports of each ``kind`` of
    ``row_ids`` (a fault was reported again); nothing for none."""
    if not row_ids:
        return
    table = _TABLES[kind]
    context.session.execute(
        sa.update(table).where(table.c.id.in_(sorted(row_ids))).values(
            healthy_reports=0))


# What an operator's clear touches: ids and uuids for the history entry
# and the host whose providers follow.
Target = collections.namedtuple('Target', [
    'device_id', 'device_uuid', 'deployable_id', 'deployable_uuid',
    'hostname'])


@db_api.reader
def target(context, kind, uuid):
    """The Target of the ``kind`` (device or deployable) with ``uuid``, in
    one statement.

    :raises: ResourceNotFound for an unknown uuid
    """
    device = _TABLES['device']
    deployable = _TABLES['deployable']
    if kind == 'device':
        select = sa.select(device.c.id, device.c.uuid, sa.null(), sa.null(),
                           device.c.hostname).where(device.c.uuid == uuid)
    else:
        select = sa.select(
            device.c.id, device.c.uuid, deployable.c.id, deployable.c.uuid,
            device.c.hostname).join(
            device, device.c.id == deployable.c.device_id).where(
            deployable.c.uuid == uuid)
    found = None
    if rows.storable(uuid):
        found = context.session.execute(select).first()
    if found is None:
        raise exception.ResourceNotFound(resource=kind.capitalize(),
                                         key='uuid', value=uuid)
    return Target(*found)
