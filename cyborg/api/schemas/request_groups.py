"""The request groups of a device profile: their keys, values and schema.

A group is a flat object of strings, each key one of ``resources:<class>``
(an amount of an accelerator resource class), ``trait:<CUSTOM_...>``
(``required`` or ``forbidden``) or ``accel:<property>`` (free text;
``accel:bitstream_id`` a Glance image uuid), as Nova's flavors give them. Every
rule is a pattern used both by ``check`` and by the group's JSON Schema.
"""

import json
import re

from cyborg.api.schemas import declarations

# Placement's resource class and trait names are at most 255 characters.
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
CUSTOM_NAME = 'CUSTOM_[A-Z0-9_]+'
TRAIT_VALUES = ('required', 'forbidden')

RESOURCE_CLASS_PATTERN = '%s|%s' % ('|'.join(ACCELERATOR_RESOURCE_CLASSES),
                                    CUSTOM_NAME)
AMOUNT_PATTERN = declarations.digits_pattern(1, MAX_RESOURCE_AMOUNT)
# Upstream stores trait keys without spaces (U+0020), so it reads
# "trait: CUSTOM_A B" as trait:CUSTOM_AB; so does cyborg.
SPACED_TRAIT_PATTERN = '[ ]*%s[ ]*[A-Z0-9_][A-Z0-9_ ]*' % '[ ]*'.join(
    'CUSTOM_')
ACCEL_PROPERTY_PATTERN = '[\\s\\S]+'


def _invalid(message, *args):
    return declarations.invalid(message % args if args else message)


def check(where, group):
    """``group`` checked, with its trait keys as stored (without spaces).

    :raises: exception.InvalidParameterValue (400) naming ``where``
    """
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
        key = _entry(where, key, value)
        if key in normalized:
            raise _invalid('%s: %s is given more than once', where, key)
        normalized[key] = value
    if BITSTREAM_ID_KEY in normalized and FUNCTION_ID_KEY in normalized:
        # A bind could not honour both: one names the image to load, the
        # other asks for whichever image provides the function.
        raise _invalid('%s: give %s or %s, not both', where,
                       BITSTREAM_ID_KEY, FUNCTION_ID_KEY)
    return normalized


def _entry(where, key, value):
    """Check one key and value of a group; return the key as stored."""
    if key.startswith(RESOURCES_PREFIX):
        if not re.fullmatch(RESOURCE_CLASS_PATTERN,
                            key[len(RESOURCES_PREFIX):]):
            raise _invalid('%s: %s names no accelerator resource class; use '
                           '%s or CUSTOM_<A-Z, 0-9, _>', where, key,
                           ', '.join(ACCELERATOR_RESOURCE_CLASSES))
        if not re.fullmatch(AMOUNT_PATTERN, value):
            raise _invalid('%s: the amount of %s must be an integer from 1 '
                           'to %d, not %r', where, key, MAX_RESOURCE_AMOUNT,
                           value)
        return key
    if key.startswith(TRAIT_PREFIX):
        if not re.fullmatch(SPACED_TRAIT_PATTERN, key[len(TRAIT_PREFIX):]):
            raise _invalid('%s: %s names no custom trait; a trait must match '
                           'CUSTOM_<A-Z, 0-9, _>', where, key)
        if value not in TRAIT_VALUES:
            raise _invalid('%s: the value of %s must be required or '
                           'forbidden, not %r', where, key, value)
        return key.replace(' ', '')
    if key.startswith(ACCEL_PREFIX):
        if not re.fullmatch(ACCEL_PROPERTY_PATTERN, key[len(ACCEL_PREFIX):]):
            raise _invalid('%s: accel: needs a property name', where)
        if key == BITSTREAM_ID_KEY and \
                not re.fullmatch(declarations.UUID_PATTERN, value):
            raise _invalid('%s: %s must be a Glance image UUID, not %r',
                           where, key, value)
        return key
    raise _invalid('%s: unknown key %s; a group key starts with %s, %s or %s',
                   where, key, RESOURCES_PREFIX, TRAIT_PREFIX, ACCEL_PREFIX)


def schema():
    """The JSON Schema of one request group."""
    value = {'type': 'string', 'maxLength': VALUE_LENGTH}
    return {
        'type': 'object',
        'minProperties': 1,
        'propertyNames': {
            'maxLength': KEY_LENGTH,
            'pattern': declarations.anchored('%s(?:%s)|%s(?:%s)|%s(?:%s)' % (
                RESOURCES_PREFIX, RESOURCE_CLASS_PATTERN,
                TRAIT_PREFIX, SPACED_TRAIT_PATTERN,
                ACCEL_PREFIX, ACCEL_PROPERTY_PATTERN)),
        },
        'patternProperties': {
            '^' + RESOURCES_PREFIX: dict(
                value, pattern=declarations.anchored(AMOUNT_PATTERN)),
            '^' + TRAIT_PREFIX: dict(value, enum=list(TRAIT_VALUES)),
            declarations.anchored(BITSTREAM_ID_KEY): dict(
                value, pattern=declarations.anchored(
                    declarations.UUID_PATTERN)),
        },
        'additionalProperties': value,
        'not': {'required': [BITSTREAM_ID_KEY, FUNCTION_ID_KEY]},
        'description': 'One request group: ``resources:<class>`` amounts '
                       '(FPGA, GPU, PGPU, VGPU or CUSTOM_*), '
                       '``trait:CUSTOM_*`` = required or forbidden, '
                       '``accel:<property>`` (``accel:bitstream_id`` a Glance '
                       'image uuid, not with ``accel:function_id``). Spaces '
                       'in a trait key are dropped; a key given twice that '
                       'way is refused.',
    }
