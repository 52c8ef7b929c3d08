"""Validation of /v2/device_profiles requests: the create body, list and delete queries.

A POST body is the upstream list of profiles (clients send a list of one;
several are accepted and created all or none). Every problem is a 400
naming the profile, the group and the key at fault; the conductor then
only has to keep names and uuids unique. The groups' own rules are in
``cyborg.api.schemas.request_groups``.
"""

import json
import re

from cyborg.common import columns
from cyborg.api.schemas import declarations
from cyborg.api.schemas import listing
from cyborg.api.schemas import request_groups

_NAME_COLUMN = columns.of('DeviceProfile', 'name')
NAME_LENGTH = _NAME_COLUMN.max_length
NAME_PATTERN = '[a-zA-Z0-9_-]+'
# The groups are stored as JSON in a Text column.
TEXT_BYTES = columns.of('DeviceProfile', 'profile_json').max_bytes
# The description's Text column, in characters of up to 4 bytes of UTF-8.
DESCRIPTION_LENGTH = columns.of('DeviceProfile', 'description').max_bytes // 4

DELETE_PARAMETER = 'value'

_NAME_ITEM = '[^,\\u0000]*[^,%s\\u0000][^,\\u0000]*' % declarations.SPACE


class Names(declarations.Declaration):
    """A comma-separated list of names (or uuids), as a list without repeats
    and without the spaces around each."""

    MESSAGES = {'type': '{name} must be a comma-separated list of names, '
                        'not {value!r}'}

    def parse(self, name, value, **context):
        if not isinstance(value, str) or \
                not self.matches(value):
            raise self.error('type', name, value, **context)
        return list(dict.fromkeys(item.strip() for item in value.split(',')))

    @staticmethod
    def matches(value):
        """Whether ``value`` is a comma-separated list of names."""
        return all(re.fullmatch(_NAME_ITEM, item)
                   for item in value.split(','))

    def filter_pattern(self):
        """One name: a pair of ``filters`` holds no comma."""
        return _NAME_ITEM

    def _schema(self):
        return {'type': 'string', 'pattern': declarations.anchored(
            '%s(?:,%s)*' % (_NAME_ITEM, _NAME_ITEM))}


names_value = Names()
# DELETE /v2/device_profiles/{uuid_or_name}: the same list in the path.
PATH_NAMES = Names(description='One uuid or name, or several names, '
                               'comma-separated.')

LISTING = listing.Listing(
    filters={'name': names_value},
    sort_keys=('uuid', 'name', 'created_at', 'updated_at'),
    descriptions={'name': 'Only the profiles of these names: one name or '
                          'several, comma-separated (exact match).'})
# Required on the collection: DELETE /v2/device_profiles/{x} is another route.
DELETE_QUERY = listing.Parameters({DELETE_PARAMETER: Names(
    description='The profiles to delete: a uuid or a comma-separated list '
                'of names.')}, required=(DELETE_PARAMETER,))

_REQUIRED_NAME = ('name (a string of 1 to {max_length} letters, digits, - '
                  'and _) is required in {where}')
_BAD_NAME = ('name must be 1 to {max_length} letters, digits, - and _, not '
             '{value!r}')
_BAD_DESCRIPTION = ('description of {where} must be a string of at most '
                    '{max_length} characters')
PROFILE = declarations.Object(
    fields={
        'name': declarations.String(
            min_length=1, column=_NAME_COLUMN, pattern=NAME_PATTERN,
            messages={'type': _REQUIRED_NAME, 'empty': _REQUIRED_NAME,
                      'length': _BAD_NAME, 'pattern': _BAD_NAME,
                      'storable': _BAD_NAME}),
        'groups': declarations.Array(
            declarations.Schema(request_groups.schema()), min_items=1,
            extensions={'x-max-bytes': TEXT_BYTES},
            description='The request groups, as Nova reads them; at most '
                        '%d bytes as JSON.' % TEXT_BYTES,
            messages={'type': 'groups of {where} must be a non-empty list '
                              'of request groups, each an object of string '
                              'keys and values'}),
        'description': declarations.String(
            max_length=DESCRIPTION_LENGTH, storable=True,
            messages={'type': _BAD_DESCRIPTION, 'length': _BAD_DESCRIPTION,
                      'storable': 'description of {where} must not contain '
                                  'NUL characters or unpaired surrogates'}),
        'uuid': declarations.Uuid(
            normalize=True,
            messages={'type': 'uuid of {where} must be a UUID, not '
                              '{value!r}'}),
    },
    required=('name', 'groups'),
    messages={'type': '{where} must be an object',
              'unknown': 'Unknown field {unknown} in {where}; a device '
                         'profile has {fields}'})
BODY = declarations.Array(
    PROFILE, min_items=1,
    description='The profiles to create, all or none: a list (clients '
                'send one). Names, and uuids when given, must not repeat.')


def list_query(params, max_limit):
    """The validated query of GET /v2/device_profiles.

    ``name`` is a comma-separated list of exact names; the filter holds
    the list.

    :raises: exception.InvalidParameterValue (400)
    """
    return LISTING.parse(params, max_limit)


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
        raise declarations.invalid('Unknown query parameter %s'
                                   % ', '.join(unknown))
    value = listing.single(DELETE_PARAMETER, params.get(DELETE_PARAMETER))
    if path_ref is not None and value is not None:
        raise declarations.invalid(
            'Name the device profiles to delete in the path or in %s, not '
            'both' % DELETE_PARAMETER)
    if path_ref is None:
        if value is None or not value.strip():
            raise declarations.invalid(
                '%s (a device profile uuid or a comma-separated list of '
                'names) is required' % DELETE_PARAMETER)
        path_ref = value
    return names_value.parse(DELETE_PARAMETER, path_ref)


def create_values(body):
    """The profiles a POST body asks for, validated and normalized.

    Returns a list of dicts with ``name``, ``groups`` (trait keys without
    spaces), ``description`` and, when given, ``uuid``.

    :raises: exception.InvalidParameterValue (400)
    """
    if not isinstance(body, list) or not body:
        raise declarations.invalid('The body must be a list of device '
                                   'profiles, [{"name": ..., "groups": '
                                   '[...]}]')
    profiles = [_profile(index, item) for index, item in enumerate(body)]
    _refuse_repeats(profiles, 'name')
    _refuse_repeats([profile for profile in profiles if 'uuid' in profile],
                    'uuid')
    return profiles


def _refuse_repeats(profiles, key):
    seen = set()
    for profile in profiles:
        if profile[key] in seen:
            raise declarations.invalid(
                'Device profile %s %s is given more than once'
                % (key, profile[key]))
        seen.add(profile[key])


def _profile(index, item):
    where = 'device profile %d' % index
    PROFILE.check('profile', item, where=where)
    fields = PROFILE.fields
    name = fields['name'].parse('name', item.get('name'), where=where)
    where = 'device profile %s' % name
    profile = {'name': name, 'description': None}
    if item.get('description') is not None:
        profile['description'] = fields['description'].parse(
            'description', item['description'], where=where)
    profile['groups'] = _groups(where, item.get('groups'))
    if item.get('uuid') is not None:
        profile['uuid'] = fields['uuid'].parse('uuid', item['uuid'],
                                               where=where)
    return profile


def _groups(where, groups):
    PROFILE.fields['groups'].check('groups', groups, where=where)
    normalized = [request_groups.check('%s group %d' % (where, index), group)
                  for index, group in enumerate(groups)]
    if len(json.dumps(normalized).encode('utf-8')) > TEXT_BYTES:
        raise declarations.invalid('groups of %s are too large' % where)
    return normalized
