"""Validation of /v2/devices requests: list filters and the status PATCH."""

from cyborg.api.schemas import listing
from cyborg.objects import fields

FILTERS = {
    'hostname': listing.string_value,
    # Any type: one outside DeviceType.ALL lists nothing, as upstream.
    'type': listing.string_value,
    'vendor': listing.string_value,
    'status': listing.one_of(fields.DeviceStatus.ALL),
}
SORT_KEYS = ('uuid', 'type', 'vendor', 'model', 'hostname', 'status',
             'created_at', 'updated_at')

# The values a status PATCH may ask for, and the status each one sets.
PATCH_STATUSES = {'enabled': fields.DeviceStatus.ENABLED,
                  'disabled': fields.DeviceStatus.MAINTAINING}
REASON_LENGTH = 255
_PATCH_KEYS = {'path', 'op', 'value', 'reason'}


def list_query(params, max_limit):
    """The validated query of GET /v2/devices.

    :raises: exception.InvalidParameterValue (400)
    """
    return listing.parse(params, FILTERS, SORT_KEYS, max_limit)


def status_patch(body):
    """The (status, reason) a PATCH /v2/devices/{uuid} document asks for.

    The document is a list of exactly one operation
    ``{"path": "/status", "op": "replace", "value": "enabled"|"disabled"}``
    with an optional ``reason`` string; ``disabled`` means ``maintaining``.

    :raises: exception.InvalidParameterValue (400)
    """
    if not isinstance(body, list) or len(body) != 1 or \
            not isinstance(body[0], dict):
        raise listing.invalid(
            'The patch must be a list of exactly one operation on /status')
    operation = body[0]
    unknown = sorted(set(operation) - _PATCH_KEYS)
    if unknown:
        raise listing.invalid('Unknown patch member %s' % ', '.join(unknown))
    if operation.get('path') != '/status':
        raise listing.invalid('Only /status can be patched, not %r'
                              % (operation.get('path'),))
    if operation.get('op') != 'replace':
        raise listing.invalid('The operation on /status must be replace, '
                              'not %r' % (operation.get('op'),))
    value = operation.get('value')
    if not isinstance(value, str) or value not in PATCH_STATUSES:
        raise listing.invalid('The value of /status must be enabled or '
                              'disabled, not %r' % (value,))
    reason = operation.get('reason')
    if reason is not None and (not isinstance(reason, str)
                               or len(reason) > REASON_LENGTH):
        raise listing.invalid('reason must be a string of at most %d '
                              'characters' % REASON_LENGTH)
    return PATCH_STATUSES[value], reason
