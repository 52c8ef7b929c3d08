"""Validation of the query string of list requests: filters and paging.

Every collection (devices, deployables, attributes) describes its filters
and sort keys; ``parse`` turns the query parameters into a ``ListQuery`` or
raises ``exception.InvalidParameterValue`` (400) naming the bad parameter.
The largest page (``[api] max_limit``) is handed in by the controller,
which has it from the request (``cyborg.api.hooks.SettingsHook``).
"""

import dataclasses

from oslo_utils import uuidutils

from cyborg import exception

PAGING_PARAMETERS = ('limit', 'marker', 'sort_key', 'sort_dir')
SORT_DIRECTIONS = ('asc', 'desc')


@dataclasses.dataclass
class ListQuery:
    """What a list request asks for, validated."""

    filters: dict
    limit: int
    marker: str = None
    sort_key: str = None
    sort_dir: str = 'asc'
    extra: dict = dataclasses.field(default_factory=dict)

    def paging(self):
        """The paging keywords every list query takes, defaults filled in."""
        return {'limit': self.limit, 'marker': self.marker,
                'sort_key': self.sort_key or 'id',
                'sort_dir': self.sort_dir or 'asc'}


def invalid(message):
    """The 400 error of a bad query parameter."""
    return exception.InvalidParameterValue(err=message)


def string_value(name, value):
    """A non-empty string filter value, as given."""
    if value == '':
        raise invalid('%s must not be empty' % name)
    return value


# The largest value of an Integer column (a signed 32-bit INT on MariaDB
# and PostgreSQL): ids and references beyond it match nothing and would
# make the database refuse the query.
MAX_INTEGER = 2 ** 31 - 1


def integer_value(name, value):
    """A filter value that must be a non-negative integer within an
    Integer column's range."""
    try:
        number = int(value, 10)
    except (TypeError, ValueError):
        raise invalid('%s must be an integer, not %r' % (name, value)) \
            from None
    if number < 0:
        raise invalid('%s must not be negative, not %r' % (name, value))
    if number > MAX_INTEGER:
        raise invalid('%s must be at most %d, not %s'
                      % (name, MAX_INTEGER, value))
    return number


def one_of(choices):
    """A filter parser accepting only ``choices``."""
    def parse_choice(name, value):
        if value not in choices:
            raise invalid('%s must be one of %s, not %r'
                          % (name, ', '.join(choices), value))
        return value
    return parse_choice


def uuid_value(name, value):
    """A filter value that must be a UUID."""
    if not uuidutils.is_uuid_like(value):
        raise invalid('%s must be a UUID, not %r' % (name, value))
    return value


def single(name, value):
    """``value`` of a query parameter that may be given only once."""
    if isinstance(value, (list, tuple)):
        raise invalid('%s may be given only once' % name)
    return value


def _limit(value, max_limit):
    """The page size asked for, ``max_limit`` when none is."""
    if value is None:
        return max_limit
    try:
        limit = int(single('limit', value), 10)
    except ValueError:
        limit = None
    if limit is None or not 1 <= limit <= max_limit:
        raise invalid('limit must be an integer from 1 to %d, not %r'
                      % (max_limit, value))
    return limit


def _filters_parameter(values, filter_parsers):
    """The upstream ``filters`` form: ``field:value`` pairs, comma-separated."""
    if not isinstance(values, (list, tuple)):
        values = [values]
    pairs = {}
    for value in values:
        for item in value.split(','):
            field, separator, field_value = item.partition(':')
            if not separator or field not in filter_parsers:
                raise invalid(
                    'filters must be field:value pairs with a field among '
                    '%s, not %r' % (', '.join(sorted(filter_parsers)), item))
            pairs[field] = filter_parsers[field](field, field_value)
    return pairs


def parse(params, filter_parsers, sort_keys, max_limit, extra_parsers=None):
    """Validate the query parameters of a list request; return a ListQuery.

    ``max_limit`` is the largest page a caller may ask for, and the page
    size when it asks for none. ``filter_parsers`` maps each filter name
    to ``parser(name, value)``; ``sort_keys`` lists the fields a caller may
    sort on; ``extra_parsers`` maps other accepted parameters to
    ``parser(name, value)`` (which sees a list when the parameter is
    repeated).

    :raises: exception.InvalidParameterValue (400)
    """
    extra_parsers = extra_parsers or {}
    known = set(filter_parsers) | set(PAGING_PARAMETERS) | {'filters'} | \
        set(extra_parsers)
    unknown = sorted(set(params) - known)
    if unknown:
        raise invalid('Unknown query parameter %s' % ', '.join(unknown))
    filters = {}
    if 'filters' in params:
        filters.update(_filters_parameter(params['filters'], filter_parsers))
    for name, parser in filter_parsers.items():
        if name in params:
            value = parser(name, single(name, params[name]))
            if filters.get(name, value) != value:
                raise invalid('%s is given twice with different values' % name)
            filters[name] = value
    marker = params.get('marker')
    if marker is not None:
        marker = uuid_value('marker', single('marker', marker))
    sort_key = params.get('sort_key')
    if sort_key is not None and single('sort_key', sort_key) not in sort_keys:
        raise invalid('sort_key must be one of %s, not %r'
                      % (', '.join(sort_keys), sort_key))
    sort_dir = single('sort_dir', params.get('sort_dir', 'asc'))
    if sort_dir not in SORT_DIRECTIONS:
        raise invalid('sort_dir must be asc or desc, not %r' % (sort_dir,))
    extra = {name: parser(name, params[name])
             for name, parser in extra_parsers.items() if name in params}
    return ListQuery(filters=filters, limit=_limit(params.get('limit'), max_limit),
                     marker=marker, sort_key=sort_key, sort_dir=sort_dir,
                     extra=extra)
