"""Validation of /v2/devices requests: list filters and the status PATCH.

From microversion 2.6 the list filters on ``health`` and ``drain`` too.
"""

from cyborg.common import columns
from cyborg.api import microversions
from cyborg.api.schemas import declarations
from cyborg.api.schemas import drain
from cyborg.api.schemas import health
from cyborg.api.schemas import listing
from cyborg.common import vocabulary

_FILTERS = {
    'hostname': listing.string_value,
    # Any type: one outside DeviceType.ALL lists nothing, as upstream.
    'type': listing.string_value,
    'vendor': listing.string_value,
    'status': listing.one_of(vocabulary.DeviceStatus.ALL),
}
_SORT_KEYS = ('uuid', 'type', 'vendor', 'model', 'hostname', 'status',
              'created_at', 'updated_at')
_DESCRIPTIONS = {
    'hostname': 'Only the devices of this host (exact match).',
    'type': 'Only the devices of this type, such as FPGA or GPU (exact '
            'match; an unknown type lists nothing).',
    'vendor': 'Only the devices of this vendor (exact match).',
    'status': 'Only the devices in this status.',
    'health': 'From microversion 2.6: only the devices in this health '
              '(healthy, degraded or failed). Below 2.6 an unknown '
              'parameter (400).',
    'drain': drain.FILTER_DESCRIPTION % 'devices',
}
# The newest query, which the route table documents; the older one is the
# same without the parameters added since.
LISTING = listing.Listing(
    filters=dict(_FILTERS, health=health.FILTER, drain=drain.FILTER),
    sort_keys=_SORT_KEYS, descriptions=_DESCRIPTIONS)
_LISTING_BEFORE_2_6 = listing.Listing(
    filters=_FILTERS, sort_keys=_SORT_KEYS, descriptions=_DESCRIPTIONS)

# The values a status PATCH may ask for, and the status each one sets.
PATCH_STATUSES = {'enabled': vocabulary.DeviceStatus.ENABLED,
                  'disabled': vocabulary.DeviceStatus.MAINTAINING}
_REASON_COLUMN = columns.of('Device', 'status_reason')
REASON_LENGTH = _REASON_COLUMN.max_length
_ONE_OPERATION = 'The patch must be a list of exactly one operation on /status'

OPERATION = declarations.Object(
    fields={
        'path': declarations.Enum(('/status',), messages={
            'choice': 'Only /status can be patched, not {value!r}'}),
        'op': declarations.Enum(('replace',), messages={
            'choice': 'The operation on /status must be replace, not '
                      '{value!r}'}),
        'value': declarations.Enum(tuple(PATCH_STATUSES), messages={
            'choice': 'The value of /status must be enabled or disabled, '
                      'not {value!r}'}),
        'reason': declarations.String(
            column=_REASON_COLUMN,
            description='Why the device is disabled (kept as its '
                        '``status_reason``).',
            messages=dict.fromkeys(
                ('type', 'length'), 'reason must be a string of at most '
                '{max_length} characters')),
    },
    required=('path', 'op', 'value'),
    messages={'type': _ONE_OPERATION,
              'unknown': 'Unknown patch member {unknown}'})
BODY = declarations.Array(
    OPERATION, min_items=1, max_items=1, messages={'type': _ONE_OPERATION},
    description='The JSON-patch form: replace ``/status`` with ``enabled`` or '
                '``disabled`` (which sets the status ``maintaining``).')


def list_query(params, max_limit, version=None):
    """The validated query of GET /v2/devices at microversion ``version``
    (None: the newest); ``health`` filters from 2.6.

    :raises: exception.InvalidParameterValue (400)
    """
    query_listing = LISTING
    if version is not None and \
            not microversions.supports_fleet_operations(version):
        query_listing = _LISTING_BEFORE_2_6
    return drain.filters(query_listing.parse(params, max_limit))


def status_patch(body):
    """The (status, reason) a PATCH /v2/devices/{uuid} document asks for.

    The document is a list of exactly one operation
    ``{"path": "/status", "op": "replace", "value": "enabled"|"disabled"}``
    with an optional ``reason`` string; ``disabled`` means ``maintaining``.

    :raises: exception.InvalidParameterValue (400)
    """
    BODY.check('patch', body)
    operation = body[0]
    OPERATION.check('patch', operation)
    for name in ('path', 'op', 'value'):
        OPERATION.fields[name].parse(name, operation.get(name))
    reason = operation.get('reason')
    if reason is not None:
        OPERATION.fields['reason'].parse('reason', reason)
    return PATCH_STATUSES[operation['value']], reason
