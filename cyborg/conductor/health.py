"""The health policy: what a device's reported health does to it and its
deployables, and an operator's clear.

At each inventory report (``inventory_report``, in the report's
transaction) every reported device's ``health`` is weighed against what
its row holds (``decide``):

* reported ``failed``: the device is failed (unless it is already);
* reported ``degraded``: a healthy device is degraded at once; one already
  degraded restarts its count of healthy reports;
* reported ``healthy``: a degraded device counts one more healthy report
  (``healthy_reports``) and is healthy again at ``[health]
  recovery_reports`` of them in a row;
* a failed device stays failed whatever is reported, until an operator
  clears it (``clear``).

A deployable degraded on its own (a failed verification of its
programming) recovers by the same rule, its device's reports counting for
it; a failed one waits for an operator too. Placement is synced after the
report as always: ``cyborg.db.queries.placement.offered_sql`` reserves the
whole inventory of a provider whose device or deployable is not healthy,
so the offer follows; ARQs bound there are left as they are.

Every change appends a ``health`` entry to the history (outcome ok, the
reason, the reporting agent's host) in the same transaction and counts in
the ``cyborg_conductor_health_changes`` metric. The counts of healthy
reports move in one statement per table
(``cyborg.db.queries.health_reports``); a change of health is one
statement of its own (``cyborg.db.queries.health``), rare by nature.
"""

import dataclasses
import logging

from oslo_utils import timeutils
import prometheus_client

from cyborg.common import vocabulary
from cyborg import exception
from cyborg.conductor import history
from cyborg.conductor import metrics as conductor_metrics
from cyborg.conductor import placement_sync
from cyborg.db import api as db_api
from cyborg.db.queries import health as health_queries
from cyborg.db.queries import health_reports
from cyborg.db.queries import history as history_queries
from cyborg import metrics

LOG = logging.getLogger(__name__)

HEALTH = vocabulary.Health
DEVICE = 'device'
DEPLOYABLE = 'deployable'
KINDS = (DEVICE, DEPLOYABLE)
# [health] recovery_reports when the caller does not say.
DEFAULT_RECOVERY_REPORTS = 3

HEALTH_CHANGES = prometheus_client.Counter(
    'cyborg_conductor_health_changes',
    'Changes of health of devices and deployables, by kind (device or '
    'deployable), the health they changed to and what changed it (report, '
    'clear, or verification: a programming not verified).',
    ['kind', 'health', 'cause'], registry=conductor_metrics.REGISTRY)

# What ``decide`` asks for a row.
CHANGE = 'change'
COUNT = 'count'
RESTART = 'restart'


@dataclasses.dataclass(frozen=True)
class Decision:
    """What one report does to a row: ``action`` (CHANGE, COUNT, RESTART)
    and, for CHANGE, the new ``health`` and its ``reason``."""

    action: str
    health: str = None
    reason: str = None


def decide(current, healthy_reports, reported, reason, recovery_reports):
    """The Decision for a row in ``current`` health with ``healthy_reports``
    counted, whose device reports ``reported`` (with ``reason``); None when
    nothing changes."""
    if current == HEALTH.FAILED:
        return None
    if reported == HEALTH.FAILED:
        return Decision(CHANGE, HEALTH.FAILED, reason)
    if reported == HEALTH.DEGRADED:
        if current == HEALTH.HEALTHY:
            return Decision(CHANGE, HEALTH.DEGRADED, reason)
        return Decision(RESTART) if healthy_reports else None
    if current == HEALTH.DEGRADED:
        if healthy_reports + 1 >= recovery_reports:
            return Decision(CHANGE, HEALTH.HEALTHY,
                            '%d healthy report(s) in a row'
                            % (healthy_reports + 1))
        return Decision(COUNT)
    return None


def _deployable_decision(row, reported, recovery_reports):
    """The Decision for a deployable whose device reports ``reported``: it
    recovers from degraded as a device does, and only a device's own
    health falls on the device (the offer reads both)."""
    if row['health'] != HEALTH.DEGRADED:
        return None
    if reported != HEALTH.HEALTHY:
        return Decision(RESTART) if row['healthy_reports'] else None
    return decide(row['health'], row['healthy_reports'], reported, None,
                  recovery_reports)


@dataclasses.dataclass
class _Plan:
    """What a report writes, gathered before writing."""

    changes: list = dataclasses.field(default_factory=list)
    counts: dict = dataclasses.field(
        default_factory=lambda: {DEVICE: [], DEPLOYABLE: []})
    restarts: dict = dataclasses.field(
        default_factory=lambda: {DEVICE: [], DEPLOYABLE: []})
    # (device row, reason) of the faults reported again with a new reason.
    reasons: list = dataclasses.field(default_factory=list)

    def add(self, kind, device, deployable, decision):
        if decision is None:
            return
        row = deployable if kind == DEPLOYABLE else device
        if decision.action == CHANGE:
            self.changes.append((kind, device, deployable, decision))
        elif decision.action == COUNT:
            self.counts[kind].append(row['id'])
        else:
            self.restarts[kind].append(row['id'])


def apply_report(context, host, reported, recovery_reports=None):
    """Apply the health of a report's devices, in the caller's transaction.

    ``reported`` holds ``(device row, ReportedDevice, deployable rows)``
    for each reported device (a new device's row is as inserted: healthy);
    returns the changes as ``(kind, uuid, health, reason)``.
    """
    recovery_reports = recovery_reports or DEFAULT_RECOVERY_REPORTS
    plan = _Plan()
    for device, device_report, deployables in reported:
        if device['health'] == device_report.health != HEALTH.HEALTHY and \
                device['health_reason'] != device_report.health_reason:
            # The same fault, told otherwise: the reason follows.
            plan.reasons.append((device, device_report.health_reason))
        plan.add(DEVICE, device, None, decide(
            device['health'], device['healthy_reports'],
            device_report.health, device_report.health_reason,
            recovery_reports))
        for deployable in deployables:
            plan.add(DEPLOYABLE, device, deployable, _deployable_decision(
                deployable, device_report.health, recovery_reports))
    for kind in KINDS:
        health_reports.count_healthy(context, kind, plan.counts[kind])
        health_reports.restart_counts(context, kind, plan.restarts[kind])
    for device, reason in plan.reasons:
        health_queries.set_device_health(context, device['id'],
                                         device['health'], reason)
    return _change(context, host, plan.changes)


def _change(context, host, changes):
    """Write each change with its history entry (one INSERT for all)."""
    now = timeutils.utcnow()
    entries = []
    done = []
    for kind, device, deployable, decision in changes:
        if kind == DEVICE:
            changed = health_queries.set_device_health(
                context, device['id'], decision.health, decision.reason)
        else:
            changed = health_queries.set_deployable_health(
                context, deployable['id'], decision.health, decision.reason)
        if not changed:
            continue
        entries.append(entry(context, device, deployable, history.EVENTS.HEALTH,
                             now, decision.reason, agent=host,
                             health=decision.health))
        row = deployable if kind == DEPLOYABLE else device
        done.append((kind, row['uuid'], decision.health, decision.reason))
        _log_change(host, kind, row['uuid'], decision)
        count_change(kind, decision.health, 'report')
    history_queries.append(context, entries)
    return done


def _log_change(host, kind, uuid, decision):
    level = logging.INFO if decision.health == HEALTH.HEALTHY \
        else logging.WARNING
    LOG.log(level, '%s %s of host %s is %s: %s', kind.capitalize(), uuid,
            host, decision.health, decision.reason or 'no reason given')


def count_change(kind, health, cause):
    """Count a change of health of a ``kind`` (device or deployable) to
    ``health`` in the metric, by ``cause`` (``report``, ``clear``,
    ``verification``)."""
    if metrics.is_enabled():
        HEALTH_CHANGES.labels(kind, health, cause).inc()


def entry(context, device, deployable, event, now, reason, agent=None,
          health=None):
    """The history entry of a health change (``event`` health or
    clear_health) of ``device`` (a row, or with ``deployable`` one of its
    deployables); the reason names the new health."""
    text = '%s: %s' % (health, reason) if reason else health
    return dict(
        history.who(context), created_at=now, device_id=device['id'],
        device_uuid=device['uuid'],
        deployable_id=deployable['id'] if deployable is not None else None,
        deployable_uuid=(deployable['uuid'] if deployable is not None
                         else None),
        event=event, outcome=history.OUTCOMES.OK, reason=text, agent=agent)


def clear(context, placement, kind, uuid):
    """An operator's clear of the device or deployable (``kind``) with
    ``uuid``: healthy again, whatever it was; return whether its health
    changed.

    A change appends a ``clear_health`` entry with the caller's user,
    project and request in the same transaction; the host's providers are
    synced in any case (a sync that failed earlier is retried), so
    Placement offers it again unless something else holds it out (its
    device's health, a drain, a disable).

    :raises: Invalid for an unknown kind; ResourceNotFound for an unknown
        uuid
    """
    if kind not in KINDS:
        raise exception.Invalid(reason='kind must be one of %s, not %r'
                                % (', '.join(KINDS), kind))
    changed, target = _clear(context, kind, uuid)
    if changed:
        LOG.info('%s %s of host %s cleared: healthy', kind.capitalize(),
                 uuid, target.hostname)
        count_change(kind, HEALTH.HEALTHY, 'clear')
    placement_sync.sync_host(context, placement, target.hostname)
    return changed


@db_api.writer
def _clear(context, kind, uuid):
    """Set healthy and append the entry when it changed."""
    target = health_reports.target(context, kind, uuid)
    if kind == DEVICE:
        changed = health_queries.set_device_health(
            context, target.device_id, HEALTH.HEALTHY, None)
    else:
        changed = health_queries.set_deployable_health(
            context, target.deployable_id, HEALTH.HEALTHY, None)
    if changed:
        device = {'id': target.device_id, 'uuid': target.device_uuid}
        deployable = None
        if kind == DEPLOYABLE:
            deployable = {'id': target.deployable_id,
                          'uuid': target.deployable_uuid}
        history_queries.append(context, [entry(
            context, device, deployable, history.EVENTS.CLEAR_HEALTH,
            timeutils.utcnow(), 'cleared by an operator',
            health=HEALTH.HEALTHY)])
    return changed, target
