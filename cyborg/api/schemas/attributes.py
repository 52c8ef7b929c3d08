"""Validation of /v2/attributes requests: list filters and the create body."""

from cyborg.api.schemas import listing

FILTERS = {
    'deployable_id': listing.integer_value,
    'key': listing.string_value,
}
SORT_KEYS = ('uuid', 'deployable_id', 'key', 'value', 'created_at',
             'updated_at')
KEY_LENGTH = 255
# The value column is Text: 65,535 bytes on MariaDB (in UTF-8).
VALUE_BYTES = 65535
_FIELDS = ('deployable_id', 'key', 'value')


def list_query(params, max_limit):
    """The validated query of GET /v2/attributes.

    :raises: exception.InvalidParameterValue (400)
    """
    return listing.parse(params, FILTERS, SORT_KEYS, max_limit)


def create_values(body):
    """The values of a new attribute from a POST body.

    The body is ``{"deployable_id": int, "key": str, "value": str}`` or the
    same object wrapped in ``{"attribute": {...}}`` (openstacksdk's form).

    :raises: exception.InvalidParameterValue (400)
    """
    if isinstance(body, dict) and set(body) == {'attribute'}:
        body = body['attribute']
    if not isinstance(body, dict):
        raise listing.invalid('The body must be an attribute object')
    unknown = sorted(set(body) - set(_FIELDS))
    if unknown:
        raise listing.invalid('Unknown attribute field %s'
                              % ', '.join(unknown))
    missing = [name for name in _FIELDS if body.get(name) is None]
    if missing:
        raise listing.invalid('%s is required' % ' and '.join(missing))
    deployable_id = body['deployable_id']
    if isinstance(deployable_id, bool) or not isinstance(deployable_id, int):
        raise listing.invalid('deployable_id must be an integer, not %s'
                              % _json_type(deployable_id))
    if not 0 <= deployable_id <= listing.MAX_INTEGER:
        raise listing.invalid('deployable_id must be between 0 and %d, not '
                              '%d' % (listing.MAX_INTEGER, deployable_id))
    key = body['key']
    if not isinstance(key, str):
        raise listing.invalid('key must be a string, not %s' % _json_type(key))
    if not key or len(key) > KEY_LENGTH:
        raise listing.invalid('key must have 1 to %d characters, not %d'
                              % (KEY_LENGTH, len(key)))
    value = body['value']
    if not isinstance(value, str):
        raise listing.invalid('value must be a string, not %s'
                              % _json_type(value))
    if len(value.encode('utf-8')) > VALUE_BYTES:
        raise listing.invalid('value must have at most %d bytes in UTF-8'
                              % VALUE_BYTES)
    return {'deployable_id': deployable_id, 'key': key, 'value': value}


def _json_type(value):
    """The JSON name of ``value``'s type, for messages."""
    if isinstance(value, bool):
        return 'a boolean'
    if isinstance(value, (int, float)):
        return 'a number'
    if isinstance(value, str):
        return 'a string'
    if isinstance(value, list):
        return 'an array'
    if isinstance(value, dict):
        return 'an object'
    return 'null'

