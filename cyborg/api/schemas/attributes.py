"""Validation of /v2/attributes requests: list filters and the create body."""

from cyborg.api.schemas import listing

FILTERS = {
    'deployable_id': listing.integer_value,
    'key': listing.string_value,
}
SORT_KEYS = ('uuid', 'deployable_id', 'key', 'value', 'created_at',
             'updated_at')
KEY_LENGTH = 255
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
    deployable_id = body.get('deployable_id')
    if isinstance(deployable_id, bool) or not isinstance(deployable_id, int):
        raise listing.invalid('deployable_id (an integer) is required')
    key = body.get('key')
    if not isinstance(key, str) or not key or len(key) > KEY_LENGTH:
        raise listing.invalid('key (a string of 1 to %d characters) is '
                              'required' % KEY_LENGTH)
    value = body.get('value')
    if value is not None and not isinstance(value, str):
        raise listing.invalid('value must be a string')
    return {'deployable_id': deployable_id, 'key': key, 'value': value}
