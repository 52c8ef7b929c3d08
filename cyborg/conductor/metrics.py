"""cyborg-conductor's metrics: the fleet read at each scrape, bind and
report timings, and the exceptions its RPC endpoints raise.

The fleet (ARQs by state; devices and attach handles by device type and
host; devices and deployables by health and by drain state) is counted
by ``FleetCollector`` in three GROUP BY statements per scrape, whatever
the size of the fleet. The timings are observed where
the work ends: ``observe_binds`` by the binder after its finishing
transaction, ``timed_report`` around the report_inventory endpoint.
"""

import logging

import prometheus_client
from prometheus_client import core
import sqlalchemy as sa

from cyborg.common import vocabulary
from cyborg import context as cyborg_context
from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.db.queries import drain as drain_queries
from cyborg import metrics

LOG = logging.getLogger(__name__)

ARQ = models.ARQ.__table__
AttachHandle = models.AttachHandle.__table__
Deployable = models.Deployable.__table__
Device = models.Device.__table__

REGISTRY = metrics.process_registry()

# A bind may take up to [conductor] bind_timeout (240 s by default).
BIND_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 240,
                float('inf'))
BIND_SECONDS = prometheus_client.Histogram(
    'cyborg_conductor_bind_duration_seconds',
    'Time from a bind request being recorded to its ARQ leaving '
    'BindStarted, by the state it ended in (Bound or BindFailed).',
    ['state'], buckets=BIND_BUCKETS, registry=REGISTRY)
REPORT_SECONDS = prometheus_client.Histogram(
    'cyborg_conductor_inventory_report_duration_seconds',
    'Time the conductor took to apply an agent\'s inventory report and '
    'bring Placement in step, by outcome (ok or failed).',
    ['outcome'], registry=REGISTRY)
REPORTS = prometheus_client.Counter(
    'cyborg_conductor_inventory_reports',
    'Inventory reports received, by result: applied (written and Placement '
    'synced) or unchanged (the same as the host\'s last applied report, '
    'skipped at the cost of one statement).',
    ['result'], registry=REGISTRY)
RPC_ERRORS = prometheus_client.Counter(
    'cyborg_conductor_rpc_errors',
    'Exceptions raised by the conductor\'s RPC endpoints, by method and '
    'exception class (domain errors such as a missing ARQ included).',
    ['method', 'error'], registry=REGISTRY)


def observe_binds(decisions, ended, now):
    """Time the binds that ``ended`` (``{arq_uuid: state}``) finished:
    from each decision's ``started_at`` to ``now`` (naive UTC)."""
    if not metrics.is_enabled():
        return
    for decision in decisions:
        state = ended.get(decision.uuid)
        if state is None or decision.started_at is None:
            continue
        seconds = (now - decision.started_at).total_seconds()
        BIND_SECONDS.labels(state).observe(max(seconds, 0))


def count_report(applied):
    """Count a report the conductor applied (True) or found unchanged."""
    if metrics.is_enabled():
        REPORTS.labels('applied' if applied else 'unchanged').inc()


# Time an inventory report endpoint, whether it succeeds or raises.
timed_report = metrics.timed(REPORT_SECONDS, lambda result: 'ok')


def counting_endpoints(manager):
    """``manager`` as the RPC endpoint, its exceptions counted by method."""
    return metrics.CountingEndpoints(manager, RPC_ERRORS)


@db_api.reader
def count_arqs_by_state(context):
    """``{state: count}`` of the ARQs, in one statement."""
    query = sa.select(ARQ.c.state, sa.func.count()).group_by(ARQ.c.state)
    return dict(context.session.execute(query).all())


@db_api.reader
def count_devices_by_type_and_host(context):
    """Per (device type, host): devices, devices with a handle in use,
    attach handles and handles in use, in one statement."""
    in_use = AttachHandle.c.in_use.is_(True)
    query = sa.select(
        Device.c.type, Device.c.hostname,
        sa.func.count(sa.distinct(Device.c.id)),
        sa.func.count(sa.distinct(sa.case((in_use, Device.c.id)))),
        sa.func.count(AttachHandle.c.id),
        sa.func.count(sa.case((in_use, AttachHandle.c.id))),
    ).select_from(
        Device.outerjoin(Deployable, Deployable.c.device_id == Device.c.id)
        .outerjoin(AttachHandle,
                   AttachHandle.c.deployable_id == Deployable.c.id)
    ).group_by(Device.c.type, Device.c.hostname)
    return context.session.execute(query).all()


# The kinds of row ``count_health_and_drain`` counts, by table.
DEVICE_KIND = 'device'
DEPLOYABLE_KIND = 'deployable'


@db_api.reader
def count_health_and_drain(context):
    """``(kind, health, drain, count)`` rows: the devices and the
    deployables (``kind``) by health and by drain state (None: not
    drained), in one statement (two grouped reads in a UNION ALL)."""
    device = models.Device
    deployable = models.Deployable
    parts = []
    for kind, table, drain in (
            (DEVICE_KIND, device, drain_queries.device_drain_sql(device)),
            (DEPLOYABLE_KIND, deployable,
             drain_queries.deployable_drain_sql(deployable))):
        rows = sa.select(table.health.label('health'),
                         drain.label('drain')).subquery()
        parts.append(sa.select(
            sa.literal(kind).label('kind'), rows.c.health, rows.c.drain,
            sa.func.count().label('count'),
        ).group_by(rows.c.health, rows.c.drain))
    return context.session.execute(sa.union_all(*parts)).all()


def _condition_families(rows):
    """The gauges of devices and deployables by health and by drain."""
    families = {}
    for kind in (DEVICE_KIND, DEPLOYABLE_KIND):
        health = core.GaugeMetricFamily(
            'cyborg_%ss_by_health' % kind,
            '%ss by health (healthy, degraded, failed).'
            % kind.capitalize(), labels=['health'])
        drain = core.GaugeMetricFamily(
            'cyborg_%ss_by_drain' % kind,
            '%ss an operator drained, by drain state (draining: an ARQ '
            'still holds one of its handles; drained: none).'
            % kind.capitalize(), labels=['drain'])
        families[kind] = (health, drain, dict.fromkeys(
            vocabulary.Health.ALL, 0), dict.fromkeys(
            vocabulary.DrainState.ALL, 0))
    for kind, health, drain, count in rows:
        _health, _drain, by_health, by_drain = families[kind]
        by_health[health] = by_health.get(health, 0) + count
        if drain is not None:
            by_drain[drain] = by_drain.get(drain, 0) + count
    for health, drain, by_health, by_drain in families.values():
        for value, count in by_health.items():
            health.add_metric([value], count)
        for value, count in by_drain.items():
            drain.add_metric([value], count)
        yield health
        yield drain


class FleetCollector:
    """ARQs by state, devices and attach handles by type and host, devices
    and deployables by health and drain, read from the database at each
    scrape (three statements)."""

    def collect(self):
        up = core.GaugeMetricFamily(
            'cyborg_conductor_fleet_read',
            'Whether the last scrape could read the fleet from the '
            'database (1) or not (0).')
        try:
            context = cyborg_context.get_admin_context()
            by_state = count_arqs_by_state(context)
            by_host = count_devices_by_type_and_host(context)
            conditions = count_health_and_drain(context)
        except Exception as error:
            # A scrape never fails: the other metrics are still served.
            LOG.warning('Metrics cannot read the fleet: %s: %s',
                        type(error).__name__, error)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        arqs = core.GaugeMetricFamily(
            'cyborg_arqs', 'Accelerator requests by state.', labels=['state'])
        for state in vocabulary.ARQState.ALL:
            arqs.add_metric([state], by_state.get(state, 0))
        yield arqs
        families = [core.GaugeMetricFamily(
            name, documentation, labels=['type', 'host'])
            for name, documentation in (
                ('cyborg_devices', 'Accelerator devices.'),
                ('cyborg_devices_in_use',
                 'Devices with at least one attach handle in use.'),
                ('cyborg_attach_handles', 'Attach handles.'),
                ('cyborg_attach_handles_in_use', 'Attach handles in use.'))]
        for device_type, host, *counts in by_host:
            for family, count in zip(families, counts, strict=True):
                family.add_metric([device_type, host], count)
        yield from families
        yield from _condition_families(conditions)

    def describe(self):
        # Nothing to check at registration: the names are fixed.
        return []


def scrape_registry():
    """What a scrape of the conductor reads: its metrics and the fleet's."""
    return metrics.scrape_registry(REGISTRY, [FleetCollector()])


def exporter(host, port):
    """The conductor's metrics server on (host, port), not yet started."""
    return metrics.Exporter(host, port, scrape_registry(),
                            'cyborg-conductor', '[metrics] conductor_port')
