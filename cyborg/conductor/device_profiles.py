"""Device profile workflows of the conductor: create and delete, all or none.

The API has already validated the profiles (``cyborg.api.schemas.
device_profiles``); here each request becomes one transaction, so a
duplicate name, a missing profile or a profile still used by an ARQ
leaves the database as it was.
"""

import logging

from oslo_db import exception as db_exception
from oslo_utils import uuidutils

from cyborg import exception
from cyborg import objects
from cyborg.conductor import quota
from cyborg.db import api as db_api
from cyborg.db.queries import device_profiles as device_profile_queries

LOG = logging.getLogger(__name__)

FIELDS = ('name', 'groups', 'description', 'uuid')


def create(context, profiles, quotas=None):
    """Create every profile of ``profiles`` in one transaction; return them.

    ``profiles`` is a list of dicts with ``name``, ``groups`` and optionally
    ``description`` and ``uuid``. ``quotas`` (a ``quota.Quotas``) limits
    the number of profiles, all projects together (they belong to none).

    :raises: Invalid for a malformed list or a name or uuid given twice;
        DuplicateName (409) for a name already used; Conflict (409) for a
        uuid already used; QuotaExceeded (403) past the device_profiles
        limit. Nothing is created then.
    """
    _check_profiles(profiles)
    # Read from Keystone before the transaction, not while it holds locks.
    limits = quotas.limits_for(None) if quotas else {}
    deltas = quota.limited(limits, {quota.DEVICE_PROFILES: len(profiles)})
    created = _create_rows(context, profiles, limits, deltas)
    if deltas:
        _recheck_quota(context, created, limits, deltas)
    LOG.info('Device profiles created: %s',
             ', '.join('%s (%s)' % (profile.name, profile.uuid)
                       for profile in created))
    return created


def delete(context, refs):
    """Delete the profiles named by ``refs`` (uuids or names) in one transaction.

    A uuid-like ref names the profile with that uuid or, when there is
    none, the profile with that name.

    :raises: ResourceNotFound (404) when a ref names no profile; Conflict
        (409) when an ARQ uses one of them. Nothing is deleted then.
    """
    if not isinstance(refs, (list, tuple)) or not refs or \
            not all(isinstance(ref, str) and ref for ref in refs):
        raise exception.Invalid(
            reason='refs must be a non-empty list of profile uuids or names')
    try:
        deleted = _delete_rows(context, list(dict.fromkeys(refs)))
    except db_exception.DBReferenceError as error:
        # An ARQ was created for one of them after the check (SQLite has
        # no row locks); the foreign key refused the delete.
        raise exception.Conflict(
            'A device profile among %s is used by an accelerator request.'
            % ', '.join(refs)) from error
    LOG.info('Device profiles deleted: %s', ', '.join(deleted))


def _check_profiles(profiles):
    if not isinstance(profiles, (list, tuple)) or not profiles:
        raise exception.Invalid(reason='profiles must be a non-empty list')
    for profile in profiles:
        if not isinstance(profile, dict) or set(profile) - set(FIELDS) or \
                not profile.get('name') or not profile.get('groups'):
            raise exception.Invalid(
                reason='each profile must be a dict with name and groups '
                       'and optionally description and uuid')
    for key in ('name', 'uuid'):
        values = [profile[key] for profile in profiles if profile.get(key)]
        if len(values) != len(set(values)):
            raise exception.Invalid(
                reason='a device profile %s is given more than once' % key)


@db_api.writer
def _create_rows(context, profiles, limits, deltas):
    if deltas:
        quota.enforce(limits, deltas, quota.device_profile_usage(context))
    created = []
    for values in profiles:
        profile = objects.DeviceProfile(
            context, name=values['name'], groups=values['groups'],
            description=values.get('description'),
            uuid=values.get('uuid') or uuidutils.generate_uuid())
        profile.create(context)
        created.append(profile)
    return created


def _recheck_quota(context, created, limits, deltas):
    """Nova's re-check, after the commit: a request that committed at the
    same time may have taken the last units too; then delete the profiles."""
    try:
        quota.enforce_again(limits, deltas,
                            quota.device_profile_usage(context))
    except exception.QuotaExceeded:
        try:
            _destroy_created(context, [profile.id for profile in created])
        except db_exception.DBReferenceError:
            # An ARQ uses one already: the profiles stay, past the limit.
            LOG.warning('Device profiles %s are over the quota but in use; '
                        'they stay', ', '.join(profile.name for profile in created))
            return
        raise


@db_api.writer
def _destroy_created(context, profile_ids):
    device_profile_queries.destroy_many(context, profile_ids)


@db_api.writer
def _delete_rows(context, refs):
    """Delete what ``refs`` name; return the names deleted."""
    rows = device_profile_queries.find_for_delete(context, refs)
    by_uuid = {row.uuid: row for row in rows}
    by_name = {row.name: row for row in rows}
    found = {}
    missing = []
    for ref in refs:
        row = by_uuid.get(ref) or by_name.get(ref)
        if row is None:
            missing.append(ref)
        else:
            found[row.id] = row
    if missing:
        raise exception.ResourceNotFound(
            resource='DeviceProfile', key=_ref_kind(missing),
            value=', '.join(missing))
    in_use = device_profile_queries.count_arqs_using(context, list(found))
    if in_use:
        raise exception.Conflict(
            'Device profile %s is used by accelerator requests and cannot '
            'be deleted.' % ', '.join(sorted(found[profile_id].name
                                             for profile_id in in_use)))
    names = [row.name for row in found.values()]
    device_profile_queries.destroy_many(context, list(found))
    return names


def _ref_kind(refs):
    """How ``refs`` named the missing profiles: uuid, name or both."""
    uuid_like = [uuidutils.is_uuid_like(ref) for ref in refs]
    if all(uuid_like):
        return 'uuid'
    if not any(uuid_like):
        return 'name'
    return 'uuid or name'
