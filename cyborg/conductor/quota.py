"""Per-project limits on accelerators held by ARQs and on device profiles.

The limits are Keystone's unified limits, read with oslo.limit (the flat
model), as Nova and Glance read theirs; ``[quota] driver`` switches them
on (``cyborg.conf.quota``). The resources:

- ``class:<RESOURCE_CLASS>`` (Nova's names: ``class:FPGA``, ``class:PGPU``,
  ``class:VGPU``, ``class:CUSTOM_...``): the accelerators the ARQs of a
  project hold. An ARQ holds one accelerator of the resource class of its
  device profile group's ``resources:<RC>=<n>``; a group naming several
  classes makes one ARQ per unit of each, counted in the order of the
  class names. Usage is every ARQ of the project that exists, whatever
  its state: it is counted when ARQs are created, and a bind, which adds
  no ARQ, changes nothing.
- ``device_profiles``: the number of device profiles. Profiles belong to
  no project (every project uses them), so the count is of all of them
  and only registered limits apply (oslo.limit's limits without project).

A resource without a limit is not limited; -1 is unlimited (Keystone's).

Races: the check runs in the transaction that writes the new rows, and
once more after the commit with the rows counted (Nova's re-check): when
two requests committed past the limit at the same time, the re-check of
each finds it over and deletes what it created, so both fail rather than
both pass. On SQLite, whose writers take turns, the first check suffices.
Limits are read from Keystone before the transaction begins, never while
it holds locks.
"""

import collections
import logging
import threading

from keystoneauth1 import exceptions as keystoneauth_exceptions
from openstack import exceptions as sdk_exceptions
from oslo_limit import exception as limit_exception
from oslo_limit import limit
from oslo_serialization import jsonutils

from cyborg import exception
from cyborg.conf import quota as quota_conf
from cyborg.db.queries import usage as usage_queries

LOG = logging.getLogger(__name__)

CLASS_PREFIX = 'class:'
RESOURCES_PREFIX = 'resources:'
DEVICE_PROFILES = 'device_profiles'


def resource_classes(group, index=None):
    """``{resource class: amount}`` of a profile group's ``resources:*`` keys
    (a negative amount counts as 0); ``index``, the group's, names it in the
    error.

    :raises: Invalid (400) for an amount that is not an integer
    """
    classes = {}
    for key, value in group.items():
        if not key.startswith(RESOURCES_PREFIX):
            continue
        try:
            amount = int(str(value).strip(), 10)
        except ValueError:
            where = 'a group' if index is None else 'group %d' % index
            raise exception.Invalid(
                reason='%s of the device profile has %s=%r, not an '
                       'integer' % (where, key, value)) from None
        classes[key[len(RESOURCES_PREFIX):]] = max(amount, 0)
    return classes


def arq_classes(group, arqs):
    """``{"class:<RC>": accelerators}`` held by ``arqs`` ARQs of ``group``.

    A whole set of the group's ARQs holds each amount; the ARQs of a set
    that is not whole fill the classes in the order of their names.
    """
    classes = sorted(resource_classes(group).items())
    per_set = sum(amount for _, amount in classes)
    held = {}
    if not per_set:
        return held
    whole, rest = divmod(arqs, per_set)
    for name, amount in classes:
        count = whole * amount + min(rest, amount)
        rest -= min(rest, amount)
        if count:
            held[CLASS_PREFIX + name] = count
    return held


def arq_usage(context, project_id):
    """``{"class:<RC>": accelerators}`` the ARQs of a project hold: one query."""
    usage = collections.Counter()
    for profile_json, group_id, arqs in usage_queries.arqs_per_profile_group(
            context, project_id):
        groups = jsonutils.loads(profile_json)
        if 0 <= group_id < len(groups):
            usage.update(arq_classes(groups[group_id], arqs))
    return dict(usage)


def device_profile_usage(context):
    """``{"device_profiles": number of profiles}``: one query."""
    return {DEVICE_PROFILES: usage_queries.count_device_profiles(context)}


def limited(limits, deltas):
    """The positive deltas that a limit applies to (-1 and none do not)."""
    return {name: amount for name, amount in deltas.items()
            if amount > 0 and limits.get(name, -1) >= 0}


def enforce(limits, deltas, usage):
    """Refuse ``deltas`` when usage plus delta passes a limit.

    ``deltas`` and ``usage`` are what the request adds and what the project
    holds without it, by resource name.

    :raises: QuotaExceeded (403) naming each resource over its limit
    """
    over = [(name, delta, usage.get(name, 0), limits[name])
            for name, delta in sorted(limited(limits, deltas).items())
            if usage.get(name, 0) + delta > limits[name]]
    if over:
        raise exception.QuotaExceeded.for_resources(over)


def enforce_again(limits, deltas, usage):
    """``enforce`` after the commit: ``usage`` includes ``deltas`` now."""
    enforce(limits, deltas, {name: usage.get(name, 0) - amount
                             for name, amount in deltas.items()})


class LocalEnforcer:
    """The limit look-ups of oslo.limit's Enforcer over fixed limits.

    ``[quota] driver = local``: ``limits`` (resource name to limit) act
    as registered limits of every project; there are no project limits.
    """

    def __init__(self, limits):
        self._limits = dict(limits)

    def get_registered_limits(self, resource_names):
        """(name, limit) pairs; all of them for None, 0 when one is absent."""
        if resource_names is None:
            return sorted(self._limits.items())
        return [(name, self._limits.get(name, 0)) for name in resource_names]

    def get_project_limits(self, project_id, resource_names):
        """The registered limits: nothing overrides them per project."""
        if resource_names is None:
            return []
        return self.get_registered_limits(resource_names)


def _usage_read_elsewhere(project_id, resource_names):
    raise NotImplementedError(
        'cyborg counts usage inside its own transactions '
        '(cyborg.conductor.quota); the Enforcer only reads limits')


def keystone_enforcer():
    """oslo.limit's Enforcer for the [oslo_limit] endpoint, uncached."""
    return limit.Enforcer(_usage_read_elsewhere, cache=False)


# What a Keystone that cannot be reached or answers unexpectedly raises
# from oslo.limit: keystoneauth and SDK errors, its own session error, and
# ValueError for an endpoint, service or region it cannot find.
_LIMIT_ERRORS = (keystoneauth_exceptions.ClientException,
                 sdk_exceptions.SDKException,
                 limit_exception.SessionInitError, ValueError,
                 NotImplementedError)


class Quotas:
    """The limits in force, read through an Enforcer-like object.

    ``make_enforcer`` builds it on first use (oslo.limit's asks Keystone
    for the endpoint then); None means no quotas.
    """

    def __init__(self, make_enforcer=None):
        self._make_enforcer = make_enforcer
        self._enforcer = None
        self._lock = threading.Lock()

    @classmethod
    def from_conf(cls, conf):
        """The quotas ``[quota]`` configures."""
        driver = conf.quota.driver
        if driver == quota_conf.LOCAL:
            limits = dict(conf.quota.local_limits)
            return cls(lambda: LocalEnforcer(limits))
        if driver == quota_conf.UNIFIED_LIMITS:
            return cls(keystone_enforcer)
        return cls()

    @property
    def enabled(self):
        return self._make_enforcer is not None

    def _get_enforcer(self):
        with self._lock:
            if self._enforcer is None:
                self._enforcer = self._make_enforcer()
            return self._enforcer

    def limits_for(self, project_id):
        """``{resource name: limit}`` for ``project_id`` (None: registered
        limits only); {} when quotas are off.

        A project limit overrides the registered limit of its resource.

        :raises: QuotaLimitsUnavailable (503) when they cannot be read
        """
        if not self.enabled:
            return {}
        try:
            enforcer = self._get_enforcer()
            limits = dict(enforcer.get_registered_limits(None))
            if project_id is not None:
                limits.update(enforcer.get_project_limits(project_id, None))
        except _LIMIT_ERRORS as error:
            LOG.warning('Reading the quota limits failed: %s', error)
            raise exception.QuotaLimitsUnavailable(
                reason='%s: %s' % (type(error).__name__, error)) from error
        return limits
