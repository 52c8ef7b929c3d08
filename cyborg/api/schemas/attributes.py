"""Validation of /v2/attributes requests: list filters and the create body.

The limits are the columns' (``cyborg.common.columns``): a key of the
``attributes.key`` String, a value of the ``attributes.value`` Text (65,535
bytes of UTF-8, as on MariaDB), a ``deployable_id`` of an Integer (given
as a JSON integer or a string of its digits).
"""

from cyborg.common import columns
from cyborg.api.schemas import declarations
from cyborg.api.schemas import listing

_KEY_COLUMN = columns.of('Attribute', 'key')
_VALUE_COLUMN = columns.of('Attribute', 'value')
_DEPLOYABLE_ID_COLUMN = columns.of('Attribute', 'deployable_id')
KEY_LENGTH = _KEY_COLUMN.max_length
VALUE_BYTES = _VALUE_COLUMN.max_bytes

LISTING = listing.Listing(
    filters={
        'deployable_id': listing.integer_value(_DEPLOYABLE_ID_COLUMN),
        'key': listing.string_value,
    },
    sort_keys=('uuid', 'deployable_id', 'key', 'value', 'created_at',
               'updated_at'),
    descriptions={
        'deployable_id': 'Only the attributes of this deployable (its '
                         'integer id).',
        'key': 'Only the attributes with this key.',
    })

ATTRIBUTE = declarations.Object(
    fields={
        # A string of decimal digits too: upstream's own sample sends
        # "deployable_id": "1".
        'deployable_id': declarations.Integer(
            minimum=0, column=_DEPLOYABLE_ID_COLUMN, strings=True,
            description='The integer id of the deployable the attribute '
                        'belongs to, or its decimal digits in a string '
                        '(as upstream\'s sample sends it).',
            messages={'type': 'deployable_id must be an integer or a string '
                              'of its decimal digits, not {value!r}'}),
        'key': declarations.String(min_length=1, column=_KEY_COLUMN),
        'value': declarations.String(column=_VALUE_COLUMN),
    },
    required=('deployable_id', 'key', 'value'),
    messages={'type': 'The body must be an attribute object',
              'unknown': 'Unknown attribute field {unknown}',
              'missing': '{missing} is required'})
WRAPPER = 'attribute'

BODY = declarations.Schema(
    {'oneOf': [ATTRIBUTE.schema(),
               {'type': 'object', 'properties': {WRAPPER: ATTRIBUTE.schema()},
                'required': [WRAPPER], 'additionalProperties': False}]},
    parse=lambda name, value: create_values(value),
    description='The attribute, or the same object wrapped in '
                '``{"attribute": {...}}`` (openstacksdk\'s form).')


def list_query(params, max_limit):
    """The validated query of GET /v2/attributes.

    :raises: exception.InvalidParameterValue (400)
    """
    return LISTING.parse(params, max_limit)


def create_values(body):
    """The values of a new attribute from a POST body.

    The body is ``{"deployable_id": int, "key": str, "value": str}`` (the
    id may be a string of decimal digits, which becomes the integer) or the
    same object wrapped in ``{"attribute": {...}}`` (openstacksdk's form).

    :raises: exception.InvalidParameterValue (400)
    """
    if isinstance(body, dict) and set(body) == {WRAPPER}:
        body = body[WRAPPER]
    return ATTRIBUTE.parse('attribute', body)
