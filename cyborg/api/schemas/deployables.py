"""Validation of /v2/deployables list queries and program requests.

Besides the deployable's own columns, a list may be filtered on its
device's ``hostname``, ``vendor``, ``type`` and uuid (``device_uuid``),
and on attributes with ``attribute=<key>:<value>`` (repeatable; every pair
must match). From microversion 2.4 ``programmed=false`` keeps the
deployables with no bitstream loaded (``bitstream_id`` null: the FPGAs an
operator may program) and ``programmed=true`` the others; below 2.4 the
parameter is unknown (400), as it was. From 2.6 ``health`` filters on
the deployable's own health, ``drain`` on its own drain.

``PATCH /v2/deployables/{uuid}/program`` takes upstream's JSON patch,
``[{"path": "/program", "op": "replace", "value": [{"image_uuid": "<id>"}]}]``
(``op`` ``add`` too); anything else is a 400 naming the problem.
``PATCH /v2/deployables/{uuid}`` is the same call in the form the Cyborg
API specification first gave it, a patch of the deployable's bitstream:
``[{"path": "/bitstream", "op": "add", "value": "<id>"}]`` (``op``
``replace`` too).
"""

from oslo_utils import uuidutils

from cyborg import exception
from cyborg.api import microversions
from cyborg.common import columns
from cyborg.api.schemas import declarations
from cyborg.api.schemas import drain
from cyborg.api.schemas import health
from cyborg.api.schemas import listing
from cyborg.api.schemas import resources

KEY_LENGTH = columns.of('Attribute', 'key').max_length

# An ``attribute`` pair: a key the attributes' column holds, a colon, any
# text (the value may itself hold colons).
ATTRIBUTE_PAIR = declarations.String(
    pattern='[^:\\u0000]{1,%d}:[^\\u0000]*' % KEY_LENGTH,
    messages={'type': '{name} must be <key>:<value>, not {value!r}',
              'pattern': '{name} must be <key>:<value>, not {value!r}'})


def _integer(field):
    return listing.integer_value(columns.of('Deployable', field))


_FILTERS = {
    'name': listing.string_value,
    'parent_id': _integer('parent_id'),
    'root_id': _integer('root_id'),
    'device_id': _integer('device_id'),
    'driver_name': listing.string_value,
    'rp_uuid': listing.uuid_value,
    'bitstream_id': listing.string_value,
    'hostname': listing.string_value,
    'vendor': listing.string_value,
    # Any type: one outside DeviceType.ALL lists nothing, as for devices.
    'type': listing.string_value,
    # The device's uuid, as GET /v2/devices shows it (its integer id is
    # shown nowhere): dashed and lower-case, as stored.
    'device_uuid': declarations.Uuid(normalize=True),
}
_SORT_KEYS = ('uuid', 'name', 'parent_id', 'root_id', 'device_id',
              'num_accelerators', 'driver_name', 'rp_uuid', 'bitstream_id',
              'hostname', 'created_at', 'updated_at')
_DESCRIPTIONS = {
    'parent_id': 'Only the deployables directly under this one (its '
                 'integer id).',
    'root_id': 'Only the deployables of the tree under this root (its '
               'integer id).',
    'device_id': 'Only the deployables of this device (its integer id).',
    'hostname': 'Only the deployables of this host\'s devices.',
    'vendor': 'Only the deployables of this vendor\'s devices.',
    'type': 'Only the deployables of devices of this type.',
    'device_uuid': 'Only the deployables of this device (its uuid, as '
                   'GET /v2/devices shows it); an unknown one lists none. '
                   'Not in upstream Cyborg.',
    'attribute': 'Only the deployables with this attribute, given as '
                 '``<key>:<value>``; repeatable (every pair must '
                 'match).',
    'programmed': 'From microversion 2.4: ``false``, only the deployables '
                  'with no bitstream loaded (``bitstream_id`` null); '
                  '``true``, only those with one. Below 2.4 an unknown '
                  'parameter (400).',
    'health': 'From microversion 2.6: only the deployables in this health '
              '(healthy, degraded or failed: their own, not their '
              'device\'s). Below 2.6 an unknown parameter (400).',
    'drain': drain.FILTER_DESCRIPTION % 'deployables' + ' A deployable '
             'below a drained one is not itself drained.',
}
PROGRAMMED_VALUES = {'true': True, 'false': False}
PROGRAMMED = declarations.Enum(
    tuple(PROGRAMMED_VALUES),
    messages={'choice': '{name} must be true or false, not {value!r}'},
    extensions={resources.MICROVERSION: '2.4'})

# The newest query, which the route table documents; each older one is
# the same without the parameters added since.
LISTING = listing.Listing(
    filters=dict(_FILTERS, health=health.FILTER, drain=drain.FILTER),
    sort_keys=_SORT_KEYS,
    extra={'attribute': listing.Repeated(ATTRIBUTE_PAIR),
           'programmed': PROGRAMMED},
    descriptions=_DESCRIPTIONS)
_LISTING_BEFORE_2_6 = listing.Listing(
    filters=_FILTERS, sort_keys=_SORT_KEYS,
    extra={'attribute': listing.Repeated(ATTRIBUTE_PAIR),
           'programmed': PROGRAMMED},
    descriptions=_DESCRIPTIONS)
_LISTING_BEFORE_2_4 = listing.Listing(
    filters=_FILTERS, sort_keys=_SORT_KEYS,
    extra={'attribute': listing.Repeated(ATTRIBUTE_PAIR)},
    descriptions=_DESCRIPTIONS)


def list_query(params, max_limit, version):
    """The validated query of GET /v2/deployables at microversion ``version``.

    ``extra['attribute']`` holds the attribute (key, value) pairs,
    ``extra['programmed']`` True or False (2.4).

    :raises: exception.InvalidParameterValue (400)
    """
    if microversions.supports_fleet_operations(version):
        query_listing = LISTING
    elif microversions.supports_programmed_filter(version):
        query_listing = _LISTING_BEFORE_2_6
    else:
        query_listing = _LISTING_BEFORE_2_4
    query = drain.filters(query_listing.parse(params, max_limit))
    if 'attribute' in query.extra:
        query.extra['attribute'] = [tuple(pair.split(':', 1))
                                    for pair in query.extra['attribute']]
    if 'programmed' in query.extra:
        query.extra['programmed'] = PROGRAMMED_VALUES[
            query.extra['programmed']]
    return query


# PATCH /v2/deployables/{uuid}/program --------------------------------------

PROGRAM_ACTION = 'program'
PROGRAM_PATH = '/program'
PROGRAM_OPS = ('replace', 'add')


def _program_message(problem):
    """The message template of an invalid program request."""
    expected = ('Expected [{"path": "/program", "op": "replace", "value": '
                '[{"image_uuid": "<Glance image id>"}]}].')
    return 'Invalid program request: %s. %s' % (
        problem, expected.replace('{', '{{').replace('}', '}}'))


IMAGE = declarations.Object(
    fields={'image_uuid': declarations.Uuid(
        normalize=True, description='The Glance image holding the '
                                    'bitstream.',
        messages={'type': _program_message(
            'value[0].image_uuid must be a UUID, not {value!r}')})},
    required=('image_uuid',),
    messages={'type': _program_message('value must be a list of one object'),
              'unknown': _program_message('unknown key(s) {unknown} in '
                                          'value')})
PROGRAM_OPERATION = declarations.Object(
    fields={
        'path': declarations.Enum((PROGRAM_PATH,), messages={
            'choice': _program_message('path must be /program, not '
                                       '{value!r}')}),
        'op': declarations.Enum(PROGRAM_OPS, messages={
            'choice': _program_message('op must be one of {choices}, not '
                                       '{value!r}')}),
        'value': declarations.Array(IMAGE, min_items=1, max_items=1, messages={
            'type': _program_message('value must be a list of one object')}),
    },
    required=('path', 'op', 'value'),
    messages={'type': _program_message('the operation must be an object'),
              'unknown': _program_message('unknown key(s) {unknown}')})
PROGRAM_BODY = declarations.Array(
    PROGRAM_OPERATION, min_items=1, max_items=1, messages={
        'type': _program_message('the body must be a list of one operation')},
    description='Upstream\'s JSON patch naming the Glance image to load.')


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


def _one_operation(body_declaration, operation_declaration, body):
    """The one operation of a patch ``body``, its body, the operation and
    its ``path`` and ``op`` checked (``value`` is the caller's).

    :raises: exception.InvalidParameterValue (400) naming the problem
    """
    body_declaration.check('body', body)
    operation = body[0]
    operation_declaration.check('operation', operation)
    for name in ('path', 'op'):
        operation_declaration.fields[name].parse(name, operation.get(name))
    return operation


def program_image_id(body):
    """The Glance image id a program request names (dashed, lower-case).

    :raises: exception.InvalidParameterValue (400) naming the problem
    """
    operation = _one_operation(PROGRAM_BODY, PROGRAM_OPERATION, body)
    value = operation.get('value')
    PROGRAM_OPERATION.fields['value'].check('value', value)
    IMAGE.check('value', value[0])
    return IMAGE.fields['image_uuid'].parse('image_uuid',
                                            value[0].get('image_uuid'))


# PATCH /v2/deployables/{uuid}: the programming call as a bitstream patch --

BITSTREAM_PATH = '/bitstream'


def _bitstream_message(problem):
    """The message template of an invalid bitstream patch."""
    expected = ('Expected [{"path": "/bitstream", "op": "add", "value": '
                '"<Glance image id>"}].')
    return 'Invalid bitstream patch: %s. %s' % (
        problem, expected.replace('{', '{{').replace('}', '}}'))


BITSTREAM_OPERATION = declarations.Object(
    fields={
        'path': declarations.Enum((BITSTREAM_PATH,), messages={
            'choice': _bitstream_message('path must be /bitstream, not '
                                         '{value!r}')}),
        'op': declarations.Enum(PROGRAM_OPS, messages={
            'choice': _bitstream_message('op must be one of {choices}, not '
                                         '{value!r}')}),
        'value': declarations.Uuid(
            normalize=True, description='The Glance image holding the '
                                        'bitstream.',
            messages={'type': _bitstream_message(
                'value must be a UUID, not {value!r}')}),
    },
    required=('path', 'op', 'value'),
    messages={'type': _bitstream_message('the operation must be an object'),
              'unknown': _bitstream_message('unknown key(s) {unknown}')})
BITSTREAM_BODY = declarations.Array(
    BITSTREAM_OPERATION, min_items=1, max_items=1, messages={
        'type': _bitstream_message('the body must be a list of one '
                                   'operation')},
    description='A JSON patch of the deployable\'s bitstream naming the '
                'Glance image to load.')


def deployable_uuid(uuid):
    """The uuid of PATCH ``/v2/deployables/{uuid}``, as programming checks it.

    :raises: exception.InvalidUUID (400)
    """
    if not uuidutils.is_uuid_like(uuid):
        raise exception.InvalidUUID(uuid=uuid)
    return uuid


def bitstream_image_id(body):
    """The Glance image id a bitstream patch names (dashed, lower-case).

    :raises: exception.InvalidParameterValue (400) naming the problem
    """
    operation = _one_operation(BITSTREAM_BODY, BITSTREAM_OPERATION, body)
    return BITSTREAM_OPERATION.fields['value'].parse('value',
                                                     operation.get('value'))
