"""The conductor's side of os-acc: plug, unplug and host readiness.

A compute node's ``os_acc`` library makes one RPC call per operation:
``Plugger.plug`` creates the instance's ARQs within the project's quota,
records their bind and runs it with the conductor's binder in the calling
thread, so that its answer is the bind's outcome; ``Plugger.unplug``
deletes them. ``host_status`` says whether a host's agent is up, has
reported and is published in Placement.
"""

import collections
import dataclasses
import hashlib
import json
import logging
import threading

import sqlalchemy as sa
from oslo_utils import timeutils
from oslo_utils import uuidutils

from cyborg import exception
from cyborg import objects
from cyborg.conductor import arqs
from cyborg.conductor import device_profiles
from cyborg.conductor import placement_sync
from cyborg.conductor import quota
from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.db.queries import arq_binding as binding_queries
from cyborg.db.queries import arqs as arq_queries
from cyborg.common import vocabulary

LOG = logging.getLogger(__name__)

STATES = vocabulary.ARQState
# Device profiles made by plug for flavors that name none.
IMPLICIT_PROFILE_PREFIX = 'os-acc-'
# Hex digits of the groups' digest in an implicit profile's name.
IMPLICIT_DIGEST_LENGTH = 32
# The binary of agents' heartbeats (cyborg.agent.manager.BINARY; that
# module is not imported here: it loads the drivers).
AGENT_BINARY = 'cyborg-agent'
# host_status waits at most this long for a report: the caller asks again.
MAX_STATUS_WAIT = 10

ARQ = models.ARQ.__table__
AttachHandle = models.AttachHandle.__table__
DeviceProfile = models.DeviceProfile.__table__
HostLock = models.HostLock.__table__


def implicit_profile_name(groups):
    """The name of the profile plug makes for ``groups``: the same groups
    always give the same name, so it is made once and reused."""
    canonical = json.dumps(groups, sort_keys=True, separators=(',', ':'))
    digest = hashlib.sha256(canonical.encode('utf-8')).hexdigest()
    return IMPLICIT_PROFILE_PREFIX + digest[:IMPLICIT_DIGEST_LENGTH]


def ensure_implicit_profile(context, groups):
    """The name of the implicit profile of ``groups``, made if missing.

    Concurrent plugs may both make it: the unique name lets one insert
    win, the other reads the winner's.

    :raises: Invalid for malformed groups; Conflict when a profile of that
        name holds other groups (made by hand)
    """
    if not isinstance(groups, list) or not groups or not all(
            isinstance(group, dict) and group and all(
                isinstance(key, str) and isinstance(value, str)
                for key, value in group.items()) for group in groups):
        raise exception.Invalid(reason='groups must be a non-empty list of '
                                       'non-empty string-to-string maps')
    name = implicit_profile_name(groups)
    try:
        profile = objects.DeviceProfile.get_by_name(context, name)
    except exception.ResourceNotFound:
        try:
            device_profiles.create(context, [{
                'name': name, 'groups': groups,
                'description': 'Made by os-acc plug from flavor extra specs'}])
        except exception.DuplicateName:
            LOG.debug('Device profile %s was made by another plug', name)
        profile = objects.DeviceProfile.get_by_name(context, name)
    if profile.groups != groups:
        raise exception.Conflict(
            'Device profile %s exists with other groups than the flavor '
            'asks for; delete it or name a profile with accel:device_profile'
            % name)
    return name


@dataclasses.dataclass(frozen=True)
class Target:
    """Where plug binds an instance's ARQs, and from which profile."""

    hostname: str
    rp_uuid: str
    profile_name: str

    def matches(self, row):
        """Whether the ARQ ``row`` (``_instance_rows``) is bound here."""
        return (row['hostname'], row['device_rp_uuid'],
                row['device_profile_name']) == (
            self.hostname, self.rp_uuid, self.profile_name)

    def binding(self, instance_uuid):
        """The binding of each of the instance's ARQs."""
        return {'hostname': self.hostname, 'device_rp_uuid': self.rp_uuid,
                'instance_uuid': instance_uuid}


@dataclasses.dataclass
class _Start:
    """What the first transaction of a plug decided: the ARQs to ``bind``
    now (leased to this binder), the handles of leftover ARQs it deleted
    (``held``, released after the commit), and whether another conductor
    is binding the instance (``busy``)."""

    bind: list = dataclasses.field(default_factory=list)
    held: list = dataclasses.field(default_factory=list)
    busy: bool = False
    # The limited quota deltas of the ARQs it created (re-checked after
    # the commit).
    deltas: dict = dataclasses.field(default_factory=dict)


class _CountingReleaser:
    """A Releaser that counts the handles it is asked to release."""

    def __init__(self, releaser):
        self.releaser = releaser
        self.count = 0

    def release(self, context, held):
        self.count += len(held)
        if self.releaser is not None:
            self.releaser.release(context, held)


class Plugger:
    """plug and unplug over the conductor's ``binder`` and ``releaser``;
    ``quotas`` (a ``quota.Quotas``, the conductor's) limit the ARQs plugs
    create."""

    def __init__(self, binder, releaser, quotas=None):
        self.binder = binder
        self.releaser = releaser
        self.quotas = quotas

    def plug(self, context, instance_uuid, hostname, rp_uuid,
             device_profile_name=None, groups=None):
        """Bind the instance's accelerators on ``rp_uuid`` of ``hostname``.

        From the profile ``device_profile_name`` or, without it, from the
        implicit profile of ``groups``. Returns ``{'attachments': [...]}``
        (per ARQ: ``arq_uuid``, ``attach_type``, ``attach_info``) once
        every ARQ is Bound; ``{'failed': [reason, ...]}`` when the bind
        failed (the instance's ARQs are deleted then); ``{'busy': True}``
        when another conductor is binding the instance right now.

        :raises: Invalid for a malformed argument; ResourceNotFound for an
            unknown profile; Conflict when the instance has accelerators
            bound elsewhere or from another profile (unplug first);
            QuotaExceeded (403) when the ARQs it would create take the
            instance's project past a limit (nothing is left then);
            QuotaLimitsUnavailable (503) when the limits cannot be read
        """
        _check_plug(instance_uuid, hostname, rp_uuid, device_profile_name,
                    groups)
        instance_uuid = instance_uuid.lower()
        # Read from Keystone before the transaction, not while it holds
        # locks (as an API create does).
        limits = self.quotas.limits_for(context.project_id) \
            if self.quotas else {}
        target, start = self._start(context, instance_uuid, hostname,
                                    rp_uuid, device_profile_name, groups,
                                    limits)
        if start.held:
            self._release(context, start.held)
        if start.busy:
            return {'busy': True}
        if start.deltas:
            self._recheck_quota(context, instance_uuid, limits, start.deltas)
        if start.bind:
            self._bind(start.bind)
        rows = _instance_rows(context, instance_uuid)
        if rows and all(row['state'] == STATES.BOUND and target.matches(row)
                        for row in rows):
            LOG.info('Instance %s plugged to %s on %s: ARQs %s',
                     instance_uuid, rp_uuid, hostname,
                     ', '.join(row['uuid'] for row in rows))
            return {'attachments': [_attachment(row) for row in rows]}
        reasons = [_failure(row) for row in rows
                   if row['state'] != STATES.BOUND] or [
            'the ARQs of the instance were deleted during the plug']
        self._delete(context, instance_uuid)
        LOG.warning('Plug of instance %s to %s on %s failed: %s',
                    instance_uuid, rp_uuid, hostname, '; '.join(reasons))
        return {'failed': reasons}

    def _start(self, context, instance_uuid, hostname, rp_uuid,
               device_profile_name, groups, limits):
        """The Target of the plug and its first transaction's _Start."""
        for attempt in (1, 2):
            name = device_profile_name or ensure_implicit_profile(context,
                                                                  groups)
            target = Target(hostname, rp_uuid.lower(), name)
            try:
                return target, _start(context, self.binder.lease,
                                      instance_uuid, target, limits)
            except exception.ResourceNotFound:
                # An implicit profile deleted since it was found (no ARQ
                # used it): made again once.
                if device_profile_name is not None or attempt == 2:
                    raise

    def _recheck_quota(self, context, instance_uuid, limits, deltas):
        """Nova's re-check, after the commit and before the bind: a create
        or plug of the project that committed at the same time may have
        taken the last units too; then the instance's ARQs are deleted."""
        try:
            quota.enforce_again(limits, deltas,
                                quota.arq_usage(context, context.project_id))
        except exception.QuotaExceeded:
            self._delete(context, instance_uuid)
            raise

    def _release(self, context, held):
        """Have the agents release ``held``, after the commit; never raises."""
        try:
            self.releaser.release(context, held)
        except Exception:
            LOG.exception('Releasing attach handles %s failed',
                          ', '.join(row['arq_uuid'] for row in held))

    def _bind(self, arq_uuids):
        """Bind now, in this thread; the binder renews the leases
        meanwhile."""
        try:
            self.binder.bind_now(arq_uuids)
        except Exception:
            # The ARQs are still in BindStarted: the plug fails and deletes
            # them.
            LOG.exception('Binding ARQs %s failed', ', '.join(arq_uuids))

    def _delete(self, context, instance_uuid):
        """Delete the instance's ARQs and release what they held."""
        cleanup_context = context.elevated()
        # Bound ARQs may be among them: this is the service's own cleanup.
        cleanup_context.has_service_token = True
        arqs.delete(cleanup_context, instance_uuid=instance_uuid,
                    releaser=self.releaser)

    def unplug(self, context, instance_uuid):
        """Unbind and delete the instance's ARQs; return how many attach
        handles they held (0 for an instance without ARQs).

        :raises: Invalid for a malformed instance uuid
        """
        _check_uuid('instance_uuid', instance_uuid)
        counter = _CountingReleaser(self.releaser)
        cleanup_context = context.elevated()
        cleanup_context.has_service_token = True
        arqs.delete(cleanup_context, instance_uuid=instance_uuid.lower(),
                    releaser=counter)
        LOG.info('Instance %s unplugged: %d attach handle(s) released',
                 instance_uuid, counter.count)
        return counter.count


def _check_plug(instance_uuid, hostname, rp_uuid, device_profile_name,
                groups):
    """Invalid (400) for malformed plug arguments."""
    _check_uuid('instance_uuid', instance_uuid)
    _check_uuid('device_rp_uuid', rp_uuid)
    if not isinstance(hostname, str) or not hostname:
        raise exception.Invalid(reason='hostname must be a host name, '
                                       'not %r' % (hostname,))
    if (device_profile_name is None) == (groups is None):
        raise exception.Invalid(reason='give device_profile_name or '
                                       'groups, not both or neither')


def _check_uuid(name, value):
    if not isinstance(value, str) or not uuidutils.is_uuid_like(value):
        raise exception.Invalid(reason='%s must be a UUID, not %r'
                                       % (name, value))


@db_api.writer
def _start(context, lease, instance_uuid, target, limits=None):
    """Decide what the plug does and record it, in one transaction.

    The ARQs it binds are leased under ``lease`` (the binder's
    ``bind_transactions.Lease``), so that no sweep takes them over.

    The ARQs it creates are checked against ``limits`` (the project's;
    None or empty: no limit) before they are inserted; QuotaExceeded rolls
    everything back.
    """
    # From here to the commit, plugs and binds of this instance take turns.
    arq_queries.bound_to_instances(context, [instance_uuid], STATES.HOLDING,
                                   [])
    rows = _instance_rows(context, instance_uuid)
    elsewhere = [row for row in rows if row['state'] in STATES.HOLDING
                 and not target.matches(row)]
    if elsewhere:
        row = elsewhere[0]
        raise exception.Conflict(
            'Instance %s has accelerators of device profile %s on resource '
            'provider %s of host %s (ARQ %s, %s); unplug it first.'
            % (instance_uuid, row['device_profile_name'],
               row['device_rp_uuid'], row['hostname'], row['uuid'],
               row['state']))
    if rows and all(row['state'] in STATES.HOLDING for row in rows):
        # Plugged already, or a bind left by a conductor that stopped.
        binding = [row['uuid'] for row in rows
                   if row['state'] == STATES.BIND_STARTED]
        if binding and _lease(context, lease, binding) != len(binding):
            return _Start(busy=True)
        return _Start(bind=binding)
    held = []
    if rows:
        # Leftovers of a failed plug whose conductor stopped before it
        # deleted them: start again.
        ids = [row['id'] for row in rows]
        held = binding_queries.handles_held_by(
            context, [row['id'] for row in rows
                      if row['attach_handle_id'] is not None])
        arq_queries.destroy_many(context, ids, timeutils.utcnow())
    deltas = _enforce_quota(context, target.profile_name, limits)
    created = arqs.create(context, target.profile_name)
    recorded = arqs.record_bind(context, {
        arq.uuid: target.binding(instance_uuid) for arq in created},
        lease=lease)
    return _Start(bind=recorded.arq_uuids, held=held, deltas=deltas)


def _enforce_quota(context, profile_name, limits):
    """The limited quota deltas of the ARQs of the profile ``profile_name``,
    once the project's usage plus them is within ``limits``.

    :raises: QuotaExceeded (403), the API create's error
    """
    if not limits:
        return {}
    profile = objects.DeviceProfile.get_by_name(context, profile_name)
    deltas = collections.Counter()
    for group, count in zip(profile.groups,
                            arqs.arqs_per_group(profile.groups), strict=True):
        deltas.update(quota.arq_classes(group, count))
    deltas = quota.limited(limits, deltas)
    if deltas:
        quota.enforce(limits, deltas,
                      quota.arq_usage(context, context.project_id))
    return deltas


def _lease(context, lease, arq_uuids):
    now = timeutils.utcnow()
    owner, expires_at = lease.taken_at(now)
    return binding_queries.take_leases(context, arq_uuids, owner, expires_at,
                                       now)


@db_api.reader
def _instance_rows(context, instance_uuid):
    """The instance's ARQs with their profile's name and attach handle, in
    one query, in the order of their profile's groups."""
    query = sa.select(
        ARQ.c.id, ARQ.c.uuid, ARQ.c.state, ARQ.c.hostname,
        ARQ.c.device_rp_uuid, ARQ.c.attach_handle_id, ARQ.c.state_reason,
        DeviceProfile.c.name.label('device_profile_name'),
        AttachHandle.c.attach_type, AttachHandle.c.attach_info,
    ).join(
        DeviceProfile, DeviceProfile.c.id == ARQ.c.device_profile_id
    ).outerjoin(
        AttachHandle, AttachHandle.c.id == ARQ.c.attach_handle_id
    ).where(ARQ.c.instance_uuid == instance_uuid).order_by(
        ARQ.c.device_profile_group_id, ARQ.c.id)
    return [dict(row) for row in context.session.execute(query).mappings()]


def _attachment(row):
    return {'arq_uuid': row['uuid'], 'attach_type': row['attach_type'],
            'attach_info': json.loads(row['attach_info'] or '{}')}


def _failure(row):
    """Why the ARQ ``row`` is not Bound."""
    if row['state'] == STATES.BIND_STARTED:
        return ('ARQ %s: its bind did not finish during the plug'
                % row['uuid'])
    return 'ARQ %s: %s%s' % (row['uuid'], row['state'],
                            ': %s' % row['state_reason']
                            if row['state_reason'] else '')


class HostReports:
    """Counts the inventory reports this process applied, by host, and
    wakes the ``host_status`` calls waiting for one."""

    def __init__(self):
        self._counts = collections.Counter()
        self._changed = threading.Condition()

    def reported(self, host):
        """Note that a report of ``host`` was applied (and synced)."""
        with self._changed:
            self._counts[host] += 1
            self._changed.notify_all()

    def count(self, host):
        """How many reports of ``host`` this process applied."""
        with self._changed:
            return self._counts[host]

    def wait(self, host, seen, timeout):
        """Wait up to ``timeout`` s for a report of ``host`` after the
        ``seen``-th; return whether one came."""
        with self._changed:
            return self._changed.wait_for(
                lambda: self._counts[host] != seen, timeout)


def host_status(context, placement, reports, host, down_time, wait=0):
    """Whether ``host`` is ready for plugs, as a dict.

    ``agent_up``: its agent's last heartbeat is at most ``down_time`` s
    old; ``reported``: a report of its inventory was applied; ``published``:
    Placement is in step with it (synced now if it was not); ``ready``: all
    three; ``reason``: why not, else None. When the host is not ready, waits
    up to ``wait`` s (at most MAX_STATUS_WAIT) for this process to apply
    its next report and looks again.
    """
    if not isinstance(host, str) or not host:
        raise exception.Invalid(reason='host must be a host name, not %r'
                                       % (host,))
    seen = reports.count(host)
    status = _host_status(context, placement, host, down_time)
    if not status['ready'] and wait and wait > 0 and reports.wait(
            host, seen, min(float(wait), MAX_STATUS_WAIT)):
        status = _host_status(context, placement, host, down_time)
    return status


def _host_status(context, placement, host, down_time):
    try:
        agent = objects.Service.get_by_host_and_binary(context, host,
                                                       AGENT_BINARY)
    except exception.ResourceNotFound:
        agent = None
    status = {'host': host, 'agent_up': bool(agent and agent.is_up(down_time)),
              'reported': _has_reported(context, host), 'published': False,
              'reason': None}
    if not status['agent_up']:
        status['reason'] = ('the agent of %s has sent no heartbeat in the '
                            'last %s s' % (host, down_time))
    elif not status['reported']:
        status['reason'] = 'the agent of %s has not reported yet' % host
    else:
        try:
            status['published'] = placement_sync.sync_host(context, placement,
                                                           host)
        except exception.CyborgException as error:
            status['reason'] = 'Placement refused the providers of %s: %s' % (
                host, error)
        if not status['published'] and status['reason'] is None:
            status['reason'] = ('Placement cannot be reached to publish the '
                                'providers of %s' % host)
    status['ready'] = status['published']
    return status


@db_api.reader
def _has_reported(context, host):
    """Whether an inventory report of ``host`` was ever applied (its row of
    host_locks is made by the first)."""
    query = sa.select(HostLock.c.host).where(HostLock.c.host == host)
    return context.session.execute(query).first() is not None
