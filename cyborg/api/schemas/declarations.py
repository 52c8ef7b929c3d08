"""Declarations of the values requests carry: each is a check and a schema.

A declaration parses a value as the API takes it, raising
``exception.InvalidParameterValue`` (400) with the API's message, and
renders the JSON Schema (2020-12, the dialect of OpenAPI 3.1) of the
values it accepts. The request schemas (``cyborg.api.schemas.<resource>``)
are built from them and ``cyborg.api.openapi`` renders the document from
the same objects, so what the API accepts and what it documents are one.

Every declaration checks with ``parse(name, value, **context)``. Its
messages are ``str.format`` templates, which an instance may override one
by one; they are filled with ``name``, ``value``, ``json`` (the JSON type of the value,
"a string"), the declaration's facts (``minimum``, ``max_length``...) and
the caller's context (such as ``where``).

Patterns are written once and used twice: anchored (``^(?:...)$``) in the
schema, with ``re.fullmatch`` here; they use only what Python's ``re`` and
ECMA-262 read alike (classes, escapes, groups, counts). A rule JSON Schema
cannot state (a length in bytes) is an ``x-`` extension of the schema.
"""

import decimal
import json
import re

from cyborg import exception

# A uuid as 32 hex digits, dashed or not (as cyborg.bitstream reads one).
UUID_PATTERN = ('[0-9a-fA-F]{32}|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-'
                '[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}')
# The characters str.strip() removes (str.isspace()), as a class body
# both regex dialects read alike.
SPACE = ('\\t\\n\\x0b\\x0c\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a'
         '\\u2028\\u2029\\u202f\\u205f\\u3000')
# Text PostgreSQL can store: no NUL (MariaDB and SQLite take anything).
STORABLE_PATTERN = '[^\\u0000]*'


def invalid(message):
    """The 400 error of a bad request value."""
    return exception.InvalidParameterValue(err=message)


def json_type(value):
    """The JSON name of ``value``'s type, for messages ("a string")."""
    if isinstance(value, bool):
        return 'a boolean'
    if isinstance(value, (int, float)):
        return 'a number'
    if isinstance(value, str):
        return 'a string'
    if isinstance(value, (list, tuple)):
        return 'an array'
    if isinstance(value, dict):
        return 'an object'
    return 'null'


def anchored(pattern):
    """``pattern`` as a JSON Schema pattern matching whole strings."""
    return '^(?:%s)$' % pattern


def is_storable(text):
    """Whether every backend can store ``text``: no NUL (PostgreSQL) and
    no lone surrogate (which UTF-8 cannot encode)."""
    if '\x00' in text:
        return False
    try:
        text.encode('utf-8')
    except UnicodeEncodeError:
        return False
    return True


class Declaration:
    """A value the API takes: how it is checked and its JSON Schema."""

    MESSAGES = {}

    def __init__(self, description=None, messages=None, extensions=None):
        self.description = description
        self.messages = dict(self.MESSAGES, **(messages or {}))
        self.extensions = dict(extensions or {})

    def facts(self):
        """The values a message may name besides the value itself."""
        return {}

    def error(self, problem, name, value, **context):
        """The 400 of ``problem`` (a key of the messages) with ``value``."""
        values = dict(self.facts(), name=name, value=value,
                      json=json_type(value))
        values.update(context)
        return invalid(self.messages[problem].format(**values))

    def parse(self, name, value, **context):
        """``value`` checked (and normalized).

        :raises: exception.InvalidParameterValue (400)
        """
        raise NotImplementedError

    def _schema(self):
        raise NotImplementedError

    def schema(self):
        """The JSON Schema of the values ``parse`` accepts."""
        schema = self._schema()
        if self.description:
            schema['description'] = self.description
        schema.update(self.extensions)
        return schema


def nullable(schema):
    """``schema`` that also accepts null."""
    schema = dict(schema)
    if not set(schema) - {'description'}:
        return schema
    kind = schema.get('type')
    if isinstance(kind, str) and 'enum' not in schema and \
            'const' not in schema:
        schema['type'] = [kind, 'null']
        return schema
    return {'anyOf': [schema, {'type': 'null'}]}


class Integer(Declaration):
    """A JSON integer (``text``: the decimal text of a URL) in a range.

    ``column`` (``columns.Column``) bounds the range by what it holds;
    ``strings`` also takes a string of ASCII digits (upstream does).
    """

    MESSAGES = {
        'type': '{name} must be an integer, not {json}',
        'minimum': '{name} must be between {minimum} and {maximum}, not '
                   '{value}',
        'maximum': '{name} must be between {minimum} and {maximum}, not '
                   '{value}',
    }
    DIGITS = '[ \\t\\n\\r]*[0-9]+[ \\t\\n\\r]*'
    # A JSON number's text (leading zeros allowed, as in 007).
    NUMBER_TEXT = '-?[0-9]+(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?'
    # More digits than any column's integer has (2 ** 63 has 19).
    MAX_DIGITS = 30

    def __init__(self, minimum=None, maximum=None, column=None, text=False,
                 strings=False, **kwargs):
        super().__init__(**kwargs)
        if column is not None:
            minimum = column.minimum if minimum is None else \
                max(minimum, column.minimum)
            maximum = column.maximum if maximum is None else \
                min(maximum, column.maximum)
        self.minimum = minimum
        self.maximum = maximum
        self.text = text
        self.strings = strings

    def facts(self):
        return {'minimum': self.minimum, 'maximum': self.maximum}

    def parse(self, name, value, **context):
        number = value
        if self.text:
            number = self._from_text(name, value, **context)
        elif self.strings and isinstance(value, str) and \
                re.fullmatch(self.DIGITS, value):
            number = int(value)
        elif isinstance(value, float) and value.is_integer():
            # JSON Schema's integer: a number without a fraction (5.0, 5e0).
            number = int(value)
        if isinstance(number, bool) or not isinstance(number, int):
            raise self.error('type', name, value, **context)
        if self.minimum is not None and number < self.minimum:
            raise self.error('minimum', name, value, **context)
        if self.maximum is not None and number > self.maximum:
            raise self.error('maximum', name, value, **context)
        return number

    def _from_text(self, name, value, **context):
        """The integer a URL's text writes as a JSON number: ``5``, or one
        without a fraction (``5.0``, ``5e0``), as the schema's integer is.

        ASCII only (int() would also take '+5', ' 5', '5_0' and other
        scripts' digits).
        """
        if not isinstance(value, str) or \
                not re.fullmatch(self.NUMBER_TEXT, value):
            raise self.error('type', name, value, **context)
        if re.fullmatch('-?[0-9]+', value):
            return int(value)
        number = decimal.Decimal(value)
        if number.adjusted() > self.MAX_DIGITS:
            # Past any column's range; int() of 1e999999999 would not end.
            raise self.error('maximum' if number > 0 else 'minimum', name,
                             value, **context)
        if number != number.to_integral_value():
            raise self.error('type', name, value, **context)
        return int(number)

    def filter_pattern(self):
        """The pattern of this value's text in a ``filters`` pair."""
        return digits_pattern(self.minimum, self.maximum)

    def _schema(self):
        schema = {'type': 'integer'}
        if self.minimum is not None:
            schema['minimum'] = self.minimum
        if self.maximum is not None:
            schema['maximum'] = self.maximum
        if self.strings:
            return {'anyOf': [schema, {
                'type': 'string', 'pattern': anchored(self._digits_text()),
                'description': 'the same integer in decimal digits'}]}
        return schema

    def _digits_text(self):
        """The pattern of the digits ``strings`` takes: the range's, when
        a pattern can state it."""
        if self.minimum in (0, 1) and self.maximum is not None:
            space = '[ \\t\\n\\r]*'
            return '%s(?:%s)%s' % (space, digits_pattern(self.minimum,
                                                         self.maximum), space)
        return self.DIGITS


class String(Declaration):
    """A string: its length in characters (or bytes of UTF-8) and pattern.

    ``column`` bounds the length by what the column holds and makes the
    text ``storable`` (no NUL, no lone surrogate), as does a value that
    reaches SQL as a filter.
    """

    MESSAGES = {
        'type': '{name} must be a string, not {json}',
        'length': '{name} must have {min_length} to {max_length} characters, '
                  'not {length}',
        'empty': '{name} must have {min_length} to {max_length} characters, '
                 'not {length}',
        'bytes': '{name} must have at most {max_bytes} bytes in UTF-8',
        'pattern': '{name} must match {pattern}, not {value!r}',
        'storable': '{name} must not contain NUL characters or unpaired '
                    'surrogates',
    }

    def __init__(self, min_length=0, max_length=None, max_bytes=None,
                 pattern=None, column=None, storable=None, **kwargs):
        super().__init__(**kwargs)
        if column is not None:
            if column.max_length is not None:
                max_length = column.max_length if max_length is None else \
                    min(max_length, column.max_length)
            if column.max_bytes is not None and max_bytes is None:
                max_bytes = column.max_bytes
        self.min_length = min_length
        self.max_length = max_length
        self.max_bytes = max_bytes
        self.pattern = pattern
        self.storable = column is not None if storable is None else storable

    def facts(self):
        return {'min_length': self.min_length, 'max_length': self.max_length,
                'max_bytes': self.max_bytes, 'pattern': self.pattern}

    def parse(self, name, value, **context):
        if not isinstance(value, str):
            raise self.error('type', name, value, **context)
        if len(value) < self.min_length or (
                self.max_length is not None and len(value) > self.max_length):
            raise self.error('length' if value else 'empty', name, value,
                             length=len(value), **context)
        if self.storable and not is_storable(value):
            raise self.error('storable', name, value, **context)
        if self.max_bytes is not None and \
                len(value.encode('utf-8', 'surrogatepass')) > self.max_bytes:
            raise self.error('bytes', name, value, **context)
        if self.pattern is not None and not re.fullmatch(self.pattern, value):
            raise self.error('pattern', name, value, **context)
        return value

    def filter_pattern(self):
        """The pattern of this value's text in a ``filters`` pair (no comma)."""
        if self.pattern is not None:
            return self.pattern
        return '[^,\\u0000]' + ('+' if self.min_length else '*')

    def _schema(self):
        schema = {'type': 'string'}
        if self.min_length:
            schema['minLength'] = self.min_length
        # A string of more characters than bytes allowed has too many bytes.
        max_length = self.max_length if self.max_bytes is None else \
            min(self.max_length or self.max_bytes, self.max_bytes)
        if max_length is not None:
            schema['maxLength'] = max_length
        if self.max_bytes is not None:
            schema['x-max-bytes'] = self.max_bytes
        patterns = [self.pattern] if self.pattern is not None else []
        if self.storable:
            patterns.append(STORABLE_PATTERN)
        if patterns:
            schema['pattern'] = anchored(patterns[0])
        if len(patterns) > 1:
            schema['allOf'] = [{'pattern': anchored(pattern)}
                               for pattern in patterns[1:]]
        return schema


class Uuid(Declaration):
    """A uuid (dashed or 32 hex digits); ``normalize``: returned dashed and
    in lower case."""

    MESSAGES = {'type': '{name} must be a UUID, not {value!r}'}

    def __init__(self, normalize=False, **kwargs):
        super().__init__(**kwargs)
        self.normalize = normalize

    def parse(self, name, value, **context):
        if not isinstance(value, str) or \
                not re.fullmatch(UUID_PATTERN, value):
            raise self.error('type', name, value, **context)
        if self.normalize:
            digits = value.replace('-', '').lower()
            return '-'.join((digits[:8], digits[8:12], digits[12:16],
                             digits[16:20], digits[20:]))
        return value

    def filter_pattern(self):
        """The pattern of this value's text in a ``filters`` pair."""
        return UUID_PATTERN

    def _schema(self):
        return {'type': 'string', 'pattern': anchored(UUID_PATTERN)}


class Enum(Declaration):
    """One of ``choices``."""

    MESSAGES = {'choice': '{name} must be one of {choices}, not {value!r}'}

    def __init__(self, choices, **kwargs):
        super().__init__(**kwargs)
        self.choices = tuple(choices)

    def facts(self):
        return {'choices': ', '.join(str(choice) for choice in self.choices)}

    def parse(self, name, value, **context):
        if isinstance(value, (dict, list)) or value not in self.choices or \
                any(value == choice and type(value) is not type(choice)
                    for choice in self.choices):
            raise self.error('choice', name, value, **context)
        return value

    def filter_pattern(self):
        """The pattern of this value's text in a ``filters`` pair."""
        return '|'.join(re.escape(str(choice)) for choice in self.choices)

    def _schema(self):
        if len(self.choices) == 1:
            return {'const': self.choices[0]}
        return {'enum': list(self.choices)}


class Array(Declaration):
    """A list of ``items``, from ``min_items`` to ``max_items`` long."""

    MESSAGES = {'type': '{name} must be a list of {min_items} to {max_items} '
                        'items'}

    def __init__(self, items, min_items=0, max_items=None, **kwargs):
        super().__init__(**kwargs)
        self.items = items
        self.min_items = min_items
        self.max_items = max_items

    def facts(self):
        return {'min_items': self.min_items, 'max_items': self.max_items}

    def check(self, name, value, **context):
        """Raise unless ``value`` is a list of an allowed length."""
        if not isinstance(value, list) or len(value) < self.min_items or (
                self.max_items is not None and len(value) > self.max_items):
            raise self.error('type', name, value, **context)

    def parse(self, name, value, **context):
        self.check(name, value, **context)
        return [self.items.parse('%s[%d]' % (name, index), item, **context)
                for index, item in enumerate(value)]

    def _schema(self):
        schema = {'type': 'array', 'items': self.items.schema()}
        if self.min_items:
            schema['minItems'] = self.min_items
        if self.max_items is not None:
            schema['maxItems'] = self.max_items
        return schema


class Object(Declaration):
    """An object of named ``fields`` (an ordered dict of declarations).

    A null counts as an absent field. Unknown fields are refused unless
    ``additional`` (then ignored). With a ``missing`` message, every
    missing required field is named at once before any field is parsed;
    otherwise a field's ``required`` message (its declaration's) names
    the first missing one as the fields are parsed in order.
    """

    MESSAGES = {
        'type': '{name} must be an object, not {json}',
        'unknown': 'Unknown field {unknown} in {name}',
        'required': '{field} is required in {name}',
    }

    def __init__(self, fields, required=(), additional=False, **kwargs):
        super().__init__(**kwargs)
        self.fields = dict(fields)
        self.required = tuple(required)
        self.additional = additional

    def facts(self):
        return {'fields': ', '.join(self.fields)}

    def check(self, name, value, **context):
        """Raise unless ``value`` is an object without unknown fields."""
        if not isinstance(value, dict):
            raise self.error('type', name, value, **context)
        unknown = sorted(set(value) - set(self.fields))
        if unknown and not self.additional:
            raise self.error('unknown', name, value,
                             unknown=', '.join(unknown), **context)

    def parse(self, name, value, **context):
        """The fields of ``value`` that are given (not null), parsed."""
        self.check(name, value, **context)
        if 'missing' in self.messages:
            missing = [field for field in self.required
                       if value.get(field) is None]
            if missing:
                raise self.error('missing', name, value,
                                 missing=' and '.join(missing), **context)
        parsed = {}
        for field, declaration in self.fields.items():
            if value.get(field) is None:
                if field in self.required:
                    raise self.error('required', name, value, field=field,
                                     **context)
                continue
            parsed[field] = declaration.parse(field, value[field], **context)
        return parsed

    def _schema(self):
        properties = {}
        for field, declaration in self.fields.items():
            schema = declaration.schema()
            properties[field] = schema if field in self.required else \
                nullable(schema)
        schema = {'type': 'object', 'properties': properties}
        if self.required:
            schema['required'] = list(self.required)
        if not self.additional:
            schema['additionalProperties'] = False
        return schema


class Schema(Declaration):
    """A part of a request checked by its resource's module, declared by
    the schema that module builds from the same declarations."""

    def __init__(self, schema, parse=None, **kwargs):
        super().__init__(**kwargs)
        self._fixed = schema
        self._parse = parse

    def parse(self, name, value, **context):
        if self._parse is None:
            raise NotImplementedError('%s is checked by its resource\'s '
                                      'module' % name)
        return self._parse(name, value, **context)

    def _schema(self):
        # A copy: the caller may add to it.
        return json.loads(json.dumps(self._fixed))


def _same_length_up_to(text):
    """Alternatives matching the numbers of ``len(text)`` digits up to ``text``."""
    alternatives = []
    for index, digit in enumerate(text):
        low = 1 if index == 0 else 0
        if int(digit) > low:
            rest = len(text) - index - 1
            alternatives.append('%s[%d-%d]%s' % (
                text[:index], low, int(digit) - 1,
                '[0-9]{%d}' % rest if rest else ''))
    alternatives.append(text)
    return alternatives


def digits_pattern(minimum, maximum):
    """A pattern of the decimal texts (leading zeros allowed) of the
    integers from ``minimum`` (0 or 1) to ``maximum``."""
    if minimum not in (0, 1) or maximum < 1:
        raise ValueError('digits_pattern covers 0 or 1 to a positive maximum')
    text = str(maximum)
    alternatives = ['[1-9]' if length == 1 else '[1-9][0-9]{%d}' % (length - 1)
                    for length in range(1, len(text))]
    alternatives += _same_length_up_to(text)
    pattern = '0*(?:%s)' % '|'.join(alternatives)
    return pattern + '|0+' if minimum == 0 else pattern
