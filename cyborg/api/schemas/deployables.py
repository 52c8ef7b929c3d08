"""Validation of /v2/deployables list queries.

Besides the deployable's own columns, a list may be filtered on its
device's ``hostname``, ``vendor`` and ``type``, and on attributes with
``attribute=<key>:<value>`` (repeatable; every pair must match).
"""

from cyborg.api.schemas import listing
from cyborg.objects import fields

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
    'type': listing.one_of(fields.DeviceType.ALL),
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
