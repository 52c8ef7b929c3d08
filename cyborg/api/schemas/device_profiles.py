"""Validation of /v2/device_profiles requests: the create body, list and delete queries.

A POST body is the upstream list of profiles (clients send a list of one;
several are accepted and created all or none). Every problem is a 400
naming the profile, the group and the key at fault; the conductor then
only has to keep names and uuids unique.
"""

import json
import re
import uuid

from oslo_utils import uuidutils

from cyborg.api.schemas import listing

NAME_LENGTH = 255
NAME_PATTERN = re.compile(r'[a-zA-Z0-9_-]+')
# A TEXT column holds at most 65,535 bytes on MariaDB; a UTF-8 character
# takes up to 4 of them.
TEXT_BYTES = 65535
DESCRIPTION_LENGTH = TEXT_BYTES // 4
KEY_LENGTH = 255
VALUE_LENGTH = 255
# Each unit asked for becomes one accelerator request; a group asking for
# more than this is a typo, not a server.
MAX_RESOURCE_AMOUNT = 1024

RESOURCES_PREFIX = 'resources:'
TRAIT_PREFIX = 'trait:'
ACCEL_PREFIX = 'accel:'
BITSTREAM_ID_KEY = 'accel:bitstream_id'
FUNCTION_ID_KEY = 'accel:function_id'
# The standard resource classes of accelerators; any other class must be
# a custom one.
ACCELERATOR_RESOURCE_CLASSES = ('FPGA', 'GPU', 'PGPU', 'VGPU')
CUSTOM_NAME = re.compile(r'CUSTOM_[A-Z0-9_]+')
TRAIT_VALUES = ('required', 'forbidden')

_PROFILE_KEYS = ('name', 'groups', 'description', 'uuid')

SORT_KEYS = ('uuid', 'name', 'created_at', 'updated_at')
DELETE_PARAMETER = 'value'


def _invalid(message, *args):
    return listing.invalid(message % args if args else message)


def names_value(name, value):
    """A comma-separated list of exact names, as a list without repeats."""
    names = [item.strip() for item in value.split(',')]
    if not all(names):
        raise _invalid('%s must be a comma-separated list of names, not %r',
                       name, value)
    return list(dict.fromkeys(names))


FILTERS = {'name': names_value}


def list_query(params, max_limit):
    """The validated query of GET /v2/device_profiles.

    ``name`` is a comma-separated list of exact names; the filter holds
    the list.

    :raises: exception.InvalidParameterValue (400)
    """
    return listing.parse(params, FILTERS, SORT_KEYS, max_limit)


def delete_refs(path_ref, params):
    """The profiles a DELETE names: uuids or names, without repeats.

    The path segment (``DELETE /v2/device_profiles/{x}``) or the ``value``
    parameter (``DELETE /v2/device_profiles?value=a,b``) holds one uuid or
    name, or a comma-separated list of them; exactly one of the two forms
    may be used.

    :raises: exception.InvalidParameterValue (400)
    """
    unknown = sorted(set(params) - {DELETE_PARAMETER})
    if unknown:
        raise _invalid('Unknown query parameter %s', ', '.join(unknown))
    value = listing.single(DELETE_PARAMETER, params.get(DELETE_PARAMETER))
    if path_ref is not None and value is not None:
        raise _invalid('Name the device profiles to delete in the path or '
                       'in %s, not both', DELETE_PARAMETER)
    if path_ref is None:
        if value is None or not value.strip():
            raise _invalid('%s (a device profile uuid or a comma-separated '
                           'list of names) is required', DELETE_PARAMETER)
        path_ref = value
    return names_value(DELETE_PARAMETER, path_ref)


def create_values(body):
    """The profiles a POST body asks for, validated and normalized.

    Returns a list of dicts with ``name``, ``groups`` (trait keys without
    spaces), ``description`` and, when given, ``uuid``.

    :raises: exception.InvalidParameterValue (400)
    """
    if not isinstance(body, list) or not body:
        raise _invalid('The body must be a list of device profiles, '
                       '[{"name": ..., "groups": [...]}]')
    profiles = [_profile(index, item) for index, item in enumerate(body)]
    _refuse_repeats(profiles, 'name')
    _refuse_repeats([profile for profile in profiles if 'uuid' in profile],
                    'uuid')
    return profiles


def _refuse_repeats(profiles, key):
    seen = set()
    for profile in profiles:
        if profile[key] in seen:
            raise _invalid('Device profile %s %s is given more than once',
                           key, profile[key])
        seen.add(profile[key])


def _profile(index, item):
    where = 'device profile %d' % index
    if not isinstance(item, dict):
        raise _invalid('%s must be an object', where)
    unknown = sorted(set(item) - set(_PROFILE_KEYS))
    if unknown:
        raise _invalid('Unknown field %s in %s; a device profile has %s',
                       ', '.join(unknown), where, ', '.join(_PROFILE_KEYS))
    name = item.get('name')
    if not isinstance(name, str) or not name:
        raise _invalid('name (a string of 1 to %d letters, digits, - and _) '
                       'is required in %s', NAME_LENGTH, where)
    if len(name) > NAME_LENGTH or not NAME_PATTERN.fullmatch(name):
        raise _invalid('name must be 1 to %d letters, digits, - and _, '
                       'not %r', NAME_LENGTH, name)
    where = 'device profile %s' % name
    profile = {'name': name,
               'description': _description(where, item.get('description')),
               'groups': _groups(where, item.get('groups'))}
    if item.get('uuid') is not None:
        if not isinstance(item['uuid'], str) or \
                not uuidutils.is_uuid_like(item['uuid']):
            raise _invalid('uuid of %s must be a UUID, not %r', where,
                           item['uuid'])
        profile['uuid'] = str(uuid.UUID(item['uuid']))
    return profile


def _description(where, description):
    if description is None:
        return None
    if not isinstance(description, str) or \
            len(description) > DESCRIPTION_LENGTH:
        raise _invalid('description of %s must be a string of at most %d '
                       'characters', where, DESCRIPTION_LENGTH)
    return description


def _groups(where, groups):
    if not isinstance(groups, list) or not groups:
        raise _invalid('groups of %s must be a non-empty list of request '
                       'groups, each an object of string keys and values',
                       where)
    normalized = [_group('%s group %d' % (where, index), group)
                  for index, group in enumerate(groups)]
    if len(json.dumps(normalized).encode('utf-8')) > TEXT_BYTES:
        raise _invalid('groups of %s are too large', where)
    return normalized


def _group(where, group):
    if not isinstance(group, dict) or not group:
        raise _invalid('%s must be a non-empty object of string keys and '
                       'values', where)
    normalized = {}
    for key, value in group.items():
        if not isinstance(value, str):
            raise _invalid('%s: the value of %s must be a string, not %s',
                           where, key, json.dumps(value))
        if len(key) > KEY_LENGTH or len(value) > VALUE_LENGTH:
            raise _invalid('%s: a key is at most %d characters and a value '
                           'at most %d', where, KEY_LENGTH, VALUE_LENGTH)
        key = _group_entry(where, key, value)
        if key in normalized:
            raise _invalid('%s: %s is given more than once', where, key)
        normalized[key] = value
    if BITSTREAM_ID_KEY in normalized and FUNCTION_ID_KEY in normalized:
        # A bind could not honour both: one names the image to load, the
        # other asks for whichever image provides the function.
        raise _invalid('%s: give %s or %s, not both', where,
                       BITSTREAM_ID_KEY, FUNCTION_ID_KEY)
    return normalized


def _group_entry(where, key, value):
    """Check one key and value of a group; return the key as stored."""
    if key.startswith(RESOURCES_PREFIX):
        resource_class = key[len(RESOURCES_PREFIX):]
        if not (resource_class in ACCELERATOR_RESOURCE_CLASSES
                or CUSTOM_NAME.fullmatch(resource_class)):
            raise _invalid('%s: %s names no accelerator resource class; use '
                           '%s or CUSTOM_<A-Z, 0-9, _>', where, key,
                           ', '.join(ACCELERATOR_RESOURCE_CLASSES))
        if not (value.isascii() and value.isdigit()) or \
                not 1 <= int(value) <= MAX_RESOURCE_AMOUNT:
            raise _invalid('%s: the amount of %s must be an integer from 1 '
                           'to %d, not %r', where, key, MAX_RESOURCE_AMOUNT,
                           value)
        return key
    if key.startswith(TRAIT_PREFIX):
        # Upstream stores trait keys without spaces; so do we.
        trait = key[len(TRAIT_PREFIX):].replace(' ', '')
        if not CUSTOM_NAME.fullmatch(trait):
            raise _invalid('%s: %s names no custom trait; a trait must match '
                           'CUSTOM_<A-Z, 0-9, _>', where, key)
        if value not in TRAIT_VALUES:
            raise _invalid('%s: the value of %s must be required or '
                           'forbidden, not %r', where, key, value)
        return TRAIT_PREFIX + trait
    if key.startswith(ACCEL_PREFIX):
        if key == ACCEL_PREFIX:
            raise _invalid('%s: accel: needs a property name', where)
        if key == BITSTREAM_ID_KEY and not uuidutils.is_uuid_like(value):
            raise _invalid('%s: %s must be a Glance image UUID, not %r',
                           where, key, value)
        return key
    raise _invalid('%s: unknown key %s; a group key starts with %s, %s or %s',
                   where, key, RESOURCES_PREFIX, TRAIT_PREFIX, ACCEL_PREFIX)
