"""Validation of /v2/deployables list queries and program requests.

Besides the deployable's own columns, a list may be filtered on its
device's ``hostname``, ``vendor`` and ``type``, and on attributes with
``attribute=<key>:<value>`` (repeatable; every pair must match).

``PATCH /v2/deployables/{uuid}/program`` takes upstream's JSON patch,
``[{"path": "/program", "op": "replace", "value": [{"image_uuid": "<id>"}]}]``
(``op`` ``add`` too); anything else is a 400 naming the problem.
"""

from oslo_utils import uuidutils

from cyborg import bitstream
from cyborg import exception
from cyborg.api.schemas import listing

FILTERS = {
    'name': listing.string_value,
    'parent_id': listing.integer_value,
    'root_id': listing.integer_value,
    'device_id': listing.integer_value,
    'driver_name': listing.string_value,
    'rp_uuid': listing.uuid_value,
    'bitstream_id': listing.string_value,
    'hostname': listing.string_value,
    'vendor': listing.string_value,
    # Any type: one outside DeviceType.ALL lists nothing, as for devices.
    'type': listing.string_value,
}
SORT_KEYS = ('uuid', 'name', 'parent_id', 'root_id', 'device_id',
             'num_accelerators', 'driver_name', 'rp_uuid', 'bitstream_id',
             'hostname', 'created_at', 'updated_at')
KEY_LENGTH = 255


def attribute_pairs(name, values):
    """The (key, value) pairs of the ``attribute`` parameter."""
    if not isinstance(values, (list, tuple)):
        values = [values]
    pairs = []
    for item in values:
        key, separator, value = item.partition(':')
        if not separator or not key or len(key) > KEY_LENGTH:
            raise listing.invalid('%s must be <key>:<value>, not %r'
                                  % (name, item))
        pairs.append((key, value))
    return pairs


def list_query(params, max_limit):
    """The validated query of GET /v2/deployables.

    ``extra['attribute']`` holds the attribute (key, value) pairs.

    :raises: exception.InvalidParameterValue (400)
    """
    return listing.parse(params, FILTERS, SORT_KEYS, max_limit,
                         extra_parsers={'attribute': attribute_pairs})


# PATCH /v2/deployables/{uuid}/program --------------------------------------

PROGRAM_ACTION = 'program'
PROGRAM_PATH = '/program'
PROGRAM_OPS = ('replace', 'add')
_PROGRAM_KEYS = {'path', 'op', 'value'}


def _program_invalid(problem):
    return exception.InvalidParameterValue(
        err='Invalid program request: %s. Expected [{"path": "/program", '
            '"op": "replace", "value": [{"image_uuid": "<Glance image '
            'id>"}]}].' % problem)


def program_target(uuid, remainder):
    """The deployable uuid of PATCH ``/v2/deployables/{uuid}/program``.

    ``remainder`` is what follows the uuid: ``['program']``, or
    ``['program', uuid]`` as recent openstacksdk builds the URL (the same
    uuid twice).

    :raises: exception.InvalidUUID (400); exception.NotFound (404) for
        another path
    """
    if not remainder or remainder[0] != PROGRAM_ACTION or len(remainder) > 2:
        raise exception.NotFound()
    if not uuidutils.is_uuid_like(uuid):
        raise exception.InvalidUUID(uuid=uuid)
    if len(remainder) == 2 and remainder[1] != uuid:
        raise exception.InvalidParameterValue(
            err='The URL names two deployables, %s and %s; '
                '/v2/deployables/{uuid}/program/{uuid} must repeat the same '
                'uuid.' % (uuid, remainder[1]))
    return uuid


def program_image_id(body):
    """The Glance image id a program request names (dashed, lower-case).

    :raises: exception.InvalidParameterValue (400) naming the problem
    """
    if not isinstance(body, list) or len(body) != 1:
        raise _program_invalid('the body must be a list of one operation')
    operation = body[0]
    if not isinstance(operation, dict):
        raise _program_invalid('the operation must be an object')
    unknown = sorted(set(operation) - _PROGRAM_KEYS)
    if unknown:
        raise _program_invalid('unknown key(s) %s' % ', '.join(unknown))
    if operation.get('path') != PROGRAM_PATH:
        raise _program_invalid('path must be %s, not %r'
                               % (PROGRAM_PATH, operation.get('path')))
    if operation.get('op') not in PROGRAM_OPS:
        raise _program_invalid('op must be one of %s, not %r'
                               % (', '.join(PROGRAM_OPS), operation.get('op')))
    return _image_id(operation.get('value'))


def _image_id(value):
    if not isinstance(value, list) or len(value) != 1 or \
            not isinstance(value[0], dict):
        raise _program_invalid('value must be a list of one object')
    unknown = sorted(set(value[0]) - {'image_uuid'})
    if unknown:
        raise _program_invalid('unknown key(s) %s in value'
                               % ', '.join(unknown))
    image_id = bitstream.normalize_uuid(value[0].get('image_uuid'))
    if image_id is None:
        raise _program_invalid('value[0].image_uuid must be a UUID, not %r'
                               % (value[0].get('image_uuid'),))
    return image_id
