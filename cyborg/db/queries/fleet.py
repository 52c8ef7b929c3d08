"""The read behind the fleet page (GET /v2/fleet): every device, deployable,
attach handle count and ARQ, in a fixed number of queries.

One reader transaction, five statements, whatever the size of the fleet:
the rows come back as read-only Core rows and ``cyborg.api.views.fleet``
nests them.
"""

import dataclasses

import sqlalchemy as sa

from cyborg.db import api as db_api
from cyborg.db import models

# The attributes the page shows or tells the kind of a deployable by
# (top-level ones only): the others stay in /v2/attributes.
ATTRIBUTE_KEYS = ('rc', 'region_id', 'function_id', 'vgpu_type',
                  'vgpu_type_name', 'num_vfs', 'pci_address')


@dataclasses.dataclass(frozen=True)
class FleetRows:
    """What ``fleet_rows`` read, table by table."""

    devices: list
    deployables: list
    attributes: list
    attach_handles: list
    arqs: list


def _devices():
    device = models.Device
    return sa.select(
        device.id, device.uuid, device.hostname, device.type, device.vendor,
        device.model, device.status, device.status_reason,
    ).order_by(device.hostname, device.id)


def _deployables():
    deployable = models.Deployable
    return sa.select(
        deployable.id, deployable.uuid, deployable.name, deployable.device_id,
        deployable.parent_id, deployable.num_accelerators,
        deployable.rp_uuid, deployable.bitstream_id,
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


@db_api.reader
def fleet_rows(context, project_id=None):
    """Every device, deployable, shown attribute, attach handle count and
    ARQ (only those of ``project_id`` when given), in five queries."""
    session = context.session
    return FleetRows(
        devices=session.execute(_devices()).all(),
        deployables=session.execute(_deployables()).all(),
        attributes=session.execute(_attributes()).all(),
        attach_handles=session.execute(_attach_handle_counts()).all(),
        arqs=session.execute(_arqs(project_id)).all())
