"""The read behind the fleet page (GET /v2/fleet): one page of hosts
(by name, those whose name contains a text when asked) with every device
(its health and drain state), deployable, attach handle count, ARQ and
the last history entries of each of their devices, the ARQs not yet on a
host, and the counts over the whole fleet, in a fixed number of queries.

One reader transaction, twelve statements, whatever the size of the
fleet and of its history: a page of 10,000 hosts' 80,000 devices reads
only its own hosts' rows, and the counts are aggregates the database
computes. The rows come back as read-only Core rows and
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


# The most ARQs not yet on a host a page shows (the newest).
UNPLACED_ARQS = 100


@dataclasses.dataclass(frozen=True)
class FleetRows:
    """What ``fleet_rows`` read, table by table, for the hosts of a page
    (``hosts``; ``next_marker``: the last of them when more follow), and
    the counts over the whole fleet (``counts``: a FleetCounts)."""

    devices: list
    deployables: list
    attributes: list
    attach_handles: list
    arqs: list
    history: list
    hosts: list = ()
    next_marker: str = None
    counts: object = None


@dataclasses.dataclass(frozen=True)
class FleetCounts:
    """Aggregates over the whole fleet: ``hosts``; ``devices`` rows of
    (status, health, drain, count); ``deployables`` rows of (health,
    drain, count); ``handles`` (total, in use); ``arqs`` rows of (state,
    count)."""

    hosts: int
    devices: list
    deployables: list
    handles: tuple
    arqs: list


def _page_hosts(host, limit, marker):
    """The names of the hosts of a page, one more to tell if more follow."""
    device = models.Device
    query = sa.select(device.hostname).distinct().order_by(device.hostname)
    if host:
        query = query.where(device.hostname.contains(host, autoescape=True))
    if marker is not None:
        query = query.where(device.hostname > marker)
    return query.limit(limit + 1)


def _device_ids(hosts):
    device = models.Device
    return sa.select(device.id).where(device.hostname.in_(hosts))


def _deployable_ids(hosts):
    deployable = models.Deployable
    return sa.select(deployable.id).where(
        deployable.device_id.in_(_device_ids(hosts)))


def _devices(hosts):
    device = models.Device
    return sa.select(
        device.id, device.uuid, device.hostname, device.type, device.vendor,
        device.model, device.status, device.status_reason, device.health,
        device.health_reason, device.health_since, device.drain_since,
        drain_queries.device_drain_sql(device).label('drain'),
    ).where(device.hostname.in_(hosts)).order_by(device.hostname, device.id)


def _deployables(hosts):
    deployable = models.Deployable
    return sa.select(
        deployable.id, deployable.uuid, deployable.name, deployable.device_id,
        deployable.parent_id, deployable.num_accelerators,
        deployable.rp_uuid, deployable.bitstream_id, deployable.health,
        deployable.health_reason, deployable.health_since,
        deployable.drain_since,
        drain_queries.deployable_drain_sql(deployable).label('drain'),
    ).where(deployable.device_id.in_(_device_ids(hosts))).order_by(
        deployable.id)


def _attributes(hosts):
    attribute = models.Attribute
    return sa.select(
        attribute.deployable_id, attribute.key, attribute.value,
    ).where(
        attribute.parent_attribute_id.is_(None),
        attribute.key.in_(ATTRIBUTE_KEYS),
        attribute.deployable_id.in_(_deployable_ids(hosts)),
    ).order_by(attribute.id)


def _attach_handle_counts(hosts):
    """Per deployable and attach type: how many handles, how many in use."""
    handle = models.AttachHandle
    return sa.select(
        handle.deployable_id, handle.attach_type,
        sa.func.count().label('total'),
        sa.func.sum(sa.case((handle.in_use, 1), else_=0)).label('in_use'),
    ).where(handle.deployable_id.in_(_deployable_ids(hosts))).group_by(
        handle.deployable_id, handle.attach_type).order_by(
        handle.deployable_id, handle.attach_type)


def _arqs(project_id, hosts):
    """The ARQs on the page's hosts, and the newest UNPLACED_ARQS not yet
    on a host: one statement (a UNION of two)."""
    arq = models.ARQ
    profile = models.DeviceProfile
    columns = (arq.id, arq.uuid, arq.state, arq.state_reason,
               arq.instance_uuid, arq.hostname, arq.project_id,
               arq.deployable_id, profile.name.label('device_profile_name'))
    placed = sa.select(*columns).join(
        profile, arq.device_profile_id == profile.id).where(
        arq.hostname.in_(hosts))
    unplaced = sa.select(*columns).join(
        profile, arq.device_profile_id == profile.id).where(
        arq.hostname.is_(None)).order_by(arq.id.desc()).limit(UNPLACED_ARQS)
    if project_id is not None:
        placed = placed.where(arq.project_id == project_id)
        unplaced = unplaced.where(arq.project_id == project_id)
    both = sa.union_all(placed, unplaced.subquery().select()).subquery()
    return sa.select(both).order_by(both.c.id)


def _history(arq_project_id, per_device, hosts):
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
    ).where(entry.c.device_id.in_(_device_ids(hosts)))
    if arq_project_id is not None:
        numbered = numbered.where(entry.c.arq_project_id == arq_project_id)
    numbered = numbered.subquery('numbered')
    return sa.select(
        *(numbered.c[name] for name in HISTORY_COLUMNS),
    ).where(numbered.c.number <= per_device).order_by(
        numbered.c.device_id, numbered.c.id.desc())


@db_api.reader
def fleet_rows(context, project_id=None, history_project_id=None,
               history_per_device=0, host=None, limit=20, marker=None):
    """One page of at most ``limit`` hosts (after the host named
    ``marker``; those whose name contains ``host`` when given): their
    devices, deployables, shown attributes, attach handle counts and ARQs
    (only those of ``project_id`` when given, with the newest ARQs not yet
    on a host) and the ``history_per_device`` newest history entries of
    each device (only those of ``history_project_id``'s ARQs when given);
    and the counts over the whole fleet. Twelve queries at most."""
    session = context.session
    hosts = session.execute(_page_hosts(host, limit, marker)).scalars().all()
    next_marker = hosts[limit - 1] if len(hosts) > limit else None
    hosts = hosts[:limit]
    return FleetRows(
        devices=session.execute(_devices(hosts)).all(),
        deployables=session.execute(_deployables(hosts)).all(),
        attributes=session.execute(_attributes(hosts)).all(),
        attach_handles=session.execute(_attach_handle_counts(hosts)).all(),
        arqs=session.execute(_arqs(project_id, hosts)).all(),
        history=session.execute(_history(
            history_project_id, history_per_device, hosts)).all()
        if history_per_device else [],
        hosts=hosts, next_marker=next_marker,
        counts=_counts(session, project_id))


def _counts(session, project_id):
    """The FleetCounts of the whole fleet, in five aggregate queries."""
    device = models.Device
    deployable = models.Deployable
    handle = models.AttachHandle
    arq = models.ARQ
    devices = sa.select(
        device.status, device.health,
        drain_queries.device_drain_sql(device).label('drain')).subquery()
    deployables = sa.select(
        deployable.health,
        drain_queries.deployable_drain_sql(deployable).label('drain'),
    ).subquery()
    arqs = sa.select(arq.state, sa.func.count()).group_by(arq.state)
    if project_id is not None:
        arqs = arqs.where(arq.project_id == project_id)
    return FleetCounts(
        hosts=session.execute(sa.select(
            sa.func.count(device.hostname.distinct()))).scalar_one(),
        devices=session.execute(sa.select(
            devices.c.status, devices.c.health, devices.c.drain,
            sa.func.count()).group_by(devices.c.status, devices.c.health,
                                      devices.c.drain)).all(),
        deployables=session.execute(sa.select(
            deployables.c.health, deployables.c.drain,
            sa.func.count()).group_by(deployables.c.health,
                                      deployables.c.drain)).all(),
        handles=tuple(session.execute(sa.select(
            sa.func.count(), sa.func.coalesce(sa.func.sum(
                sa.case((handle.in_use, 1), else_=0)), 0))).one()),
        arqs=session.execute(arqs).all())
