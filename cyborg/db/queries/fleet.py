"""The read behind the fleet page (GET /v2/fleet): every device (its
health and drain state), deployable, attach handle count, ARQ and the
last history entries of each device, in a fixed number of queries.

One reader transaction, six statements, whatever the size of the fleet
and of its history: the rows come back as read-only Core rows and
``cyborg.api.views.fleet`` nests them.
"""

import dataclasses

import sqlalchemy as sa

from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.db.queries import drain as drain_queries

# The attributes the page shows or tells the kind of a deployable by
# (top-level ones only): the others stay in /v2/attributes.
ATTRIBUTE_KEYS = ('rc', 'region_id', 'function_id', 'vgpu_type',
                  'vgpu_type_name', 'num_vfs', 'pci_address')
# The columns of an entry the page shows.
HISTORY_COLUMNS = ('device_id', 'id', 'created_at', 'event', 'outcome',
                   'reason', 'deployable_uuid', 'image_id', 'arq_uuid',
                   'instance_uuid', 'user_id', 'project_id', 'request_id',
                   'agent')


@dataclasses.dataclass(frozen=True)
class FleetRows:
    """What ``fleet_rows`` read, table by table."""

    devices: list
    deployables: list
    attributes: list
    attach_handles: list
    arqs: list
    history: list


def _devices():
    device = models.Device
    return sa.select(
        device.id, device.uuid, device.hostname, device.type, device.vendor,
        device.model, device.status, device.status_reason, device.health,
        device.health_reason, device.health_since, device.drain_since,
        drain_queries.device_drain_sql(device).label('drain'),
    ).order_by(device.hostname, device.id)


def _deployables():
    deployable = models.Deployable
    return sa.select(
        deployable.id, deployable.uuid, deployable.name, deployable.device_id,
        deployable.parent_id, deployable.num_accelerators,
        deployable.rp_uuid, deployable.bitstream_id, deployable.health,
        deployable.health_reason, deployable.health_since,
        deployable.drain_since,
        drain_queries.deployable_drain_sql(deployable).label('drain'),
    ).order_by(deployable.id)


def _attributes():
    attribute = models.Attribute
    return sa.select(
        attribute.deployable_id, attribute.key, attribute.value,
    ).where(
        attribute.parent_attribute_id.is_(None),
        attribute.key.in_(ATTRIBUTE_KEYS),
    ).order_by(attribute.id)


def _attach_handle_counts():
    """Per deployable and attach type: how many handles, how many in use."""
    handle = models.AttachHandle
    return sa.select(
        handle.deployable_id, handle.attach_type,
        sa.func.count().label('total'),
        sa.func.sum(sa.case((handle.in_use, 1), else_=0)).label('in_use'),
    ).group_by(handle.deployable_id, handle.attach_type).order_by(
        handle.deployable_id, handle.attach_type)


def _arqs(project_id):
    arq = models.ARQ
    profile = models.DeviceProfile
    query = sa.select(
        arq.uuid, arq.state, arq.state_reason, arq.instance_uuid,
        arq.hostname, arq.project_id, arq.deployable_id,
        profile.name.label('device_profile_name'),
    ).join(profile, arq.device_profile_id == profile.id).order_by(arq.id)
    if project_id is not None:
        query = query.where(arq.project_id == project_id)
    return query


def _history(arq_project_id, per_device):
    """The ``per_device`` newest entries of every device (only
    those of ``arq_project_id``'s ARQs when given), by device then newest
    first: one statement, the entries numbered per device by a window
    function over the (device_id, id) index."""
    entry = models.HistoryEntry.__table__
    numbered = sa.select(
        *(entry.c[name] for name in HISTORY_COLUMNS),
        sa.func.row_number().over(
            partition_by=entry.c.device_id,
            order_by=entry.c.id.desc()).label('number'),
    ).where(entry.c.device_id.is_not(None))
    if arq_project_id is not None:
        numbered = numbered.where(entry.c.arq_project_id == arq_project_id)
    numbered = numbered.subquery('numbered')
    return sa.select(
        *(numbered.c[name] for name in HISTORY_COLUMNS),
    ).where(numbered.c.number <= per_device).order_by(
        numbered.c.device_id, numbered.c.id.desc())


@db_api.reader
def fleet_rows(context, project_id=None, history_project_id=None,
               history_per_device=0):
    """Every device, deployable, shown attribute, attach handle count and
    ARQ (only those of ``project_id`` when given), and the
    ``history_per_device`` newest history entries of each device (only
    those of ``history_project_id``'s ARQs when given), in six queries
    (five without history)."""
    session = context.session
    return FleetRows(
        devices=session.execute(_devices()).all(),
        deployables=session.execute(_deployables()).all(),
        attributes=session.execute(_attributes()).all(),
        attach_handles=session.execute(_attach_handle_counts()).all(),
        arqs=session.execute(_arqs(project_id)).all(),
        history=session.execute(_history(
            history_project_id, history_per_device)).all()
        if history_per_device else [])
