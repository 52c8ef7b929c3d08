"""Validation of the query string of list requests: filters and paging.

Every collection declares a ``Listing``: its filters and other parameters
(each a declaration of ``cyborg.api.schemas.declarations``) and its sort
keys. ``Listing.parse`` turns the query parameters into a ``ListQuery`` or
raises ``exception.InvalidParameterValue`` (400) naming the bad parameter;
``Listing.parameters`` describes the same parameters for the OpenAPI
document. The largest page (``[api] max_limit``) is handed in by the
controller, which has it from the request
(``cyborg.api.hooks.SettingsHook``).
"""

import dataclasses

from cyborg.api.schemas import declarations

PAGING_PARAMETERS = ('limit', 'marker', 'sort_key', 'sort_dir')
SORT_DIRECTIONS = ('asc', 'desc')
FILTERS_PARAMETER = 'filters'

invalid = declarations.invalid

# A text filter: any non-empty text a column can be compared with.
string_value = declarations.String(
    min_length=1, storable=True,
    messages={'empty': '{name} must not be empty'})
uuid_value = declarations.Uuid()


def integer_value(column):
    """A filter on the Integer ``column``: a non-negative integer it holds."""
    return declarations.Integer(
        minimum=0, column=column, text=True,
        messages={'type': '{name} must be an integer, not {value!r}',
                  'minimum': '{name} must not be negative, not {value!r}',
                  'maximum': '{name} must be at most {maximum}, not {value}'})


def one_of(choices):
    """A filter accepting only ``choices``."""
    return declarations.Enum(choices)


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


def single(name, value):
    """``value`` of a query parameter that may be given only once."""
    if isinstance(value, (list, tuple)):
        raise invalid('%s may be given only once' % name)
    return value


class Repeated(declarations.Declaration):
    """A query parameter that may be repeated: a list of ``item`` values."""

    def __init__(self, item, **kwargs):
        super().__init__(**kwargs)
        self.item = item

    def parse(self, name, value, **context):
        values = value if isinstance(value, (list, tuple)) else [value]
        return [self.item.parse(name, item, **context) for item in values]

    def _schema(self):
        return {'type': 'array', 'items': self.item.schema()}


class FilterPairs(declarations.Declaration):
    """Upstream's ``filters``: comma-separated ``field:value`` pairs, each
    value checked as the parameter of that name."""

    MESSAGES = {'pair': 'filters must be field:value pairs with a field '
                        'among {fields}, not {value!r}'}

    def __init__(self, filters, **kwargs):
        super().__init__(**kwargs)
        self.filters = filters

    def facts(self):
        return {'fields': ', '.join(sorted(self.filters))}

    def parse(self, name, value, **context):
        pairs = {}
        for item in value.split(','):
            field, separator, field_value = item.partition(':')
            if not separator or field not in self.filters:
                raise self.error('pair', name, item, **context)
            pairs[field] = self.filters[field].parse(field, field_value)
        return pairs

    def _schema(self):
        pair = '|'.join('%s:(?:%s)' % (field, self.filters[field].filter_pattern())
                        for field in sorted(self.filters))
        return {'type': 'string',
                'pattern': declarations.anchored('(?:%s)(?:,(?:%s))*'
                                                 % (pair, pair))}


def limit_value(max_limit):
    """The declaration of ``limit``: a page of 1 to ``max_limit`` items."""
    return declarations.Integer(
        minimum=1, maximum=max_limit, text=True,
        description='The largest number of items to return (the page '
                    'size); at most [api] max_limit, which is also the '
                    'default.',
        messages=dict.fromkeys(
            ('type', 'minimum', 'maximum'),
            '{name} must be an integer from {minimum} to {maximum}, not '
            '{value!r}'))


class Listing:
    """The query parameters of one collection's GET.

    ``filters`` map a name to the declaration of its value (each also a
    field of ``filters``); ``extra`` are the other parameters (a
    ``Repeated`` one may be given more than once); ``sort_keys`` are the
    fields a caller may sort on.
    """

    def __init__(self, filters, sort_keys, extra=None, descriptions=None):
        self.filters = dict(filters)
        self.sort_keys = tuple(sort_keys)
        self.extra = dict(extra or {})
        self.descriptions = dict(descriptions or {})

    def declarations(self, max_limit):
        """Every parameter's declaration by name, in the document's order."""
        result = dict(self.filters)
        result.update(self.extra)
        result[FILTERS_PARAMETER] = Repeated(
            FilterPairs(self.filters),
            description='Upstream\'s form of the filters: field:value '
                        'pairs, comma-separated; repeatable.')
        result['limit'] = limit_value(max_limit)
        result['marker'] = declarations.Uuid(
            description='The uuid of the last item of the previous page '
                        '(from the ``next`` link).')
        result['sort_key'] = declarations.Enum(self.sort_keys)
        result['sort_dir'] = declarations.Enum(
            SORT_DIRECTIONS, messages={
                'choice': '{name} must be asc or desc, not {value!r}'})
        return result

    def parse(self, params, max_limit):
        """Validate the query parameters of a list request; return a ListQuery.

        ``max_limit`` is the largest page a caller may ask for, and the
        page size when it asks for none.

        :raises: exception.InvalidParameterValue (400)
        """
        parameters = self.declarations(max_limit)
        unknown = sorted(set(params) - set(parameters))
        if unknown:
            raise invalid('Unknown query parameter %s' % ', '.join(unknown))
        filters = {}
        for pairs in parameters[FILTERS_PARAMETER].parse(
                FILTERS_PARAMETER, params.get(FILTERS_PARAMETER, [])):
            filters.update(pairs)
        for name, declaration in self.filters.items():
            if name in params:
                value = declaration.parse(name, single(name, params[name]))
                if filters.get(name, value) != value:
                    raise invalid('%s is given twice with different values'
                                  % name)
                filters[name] = value
        values = {name: parameters[name].parse(name, single(name, params[name]))
                  for name in PAGING_PARAMETERS if name in params}
        extra = {}
        for name, declaration in self.extra.items():
            if name in params:
                value = params[name]
                if not isinstance(declaration, Repeated):
                    value = single(name, value)
                extra[name] = declaration.parse(name, value)
        return ListQuery(filters=filters,
                         limit=values.get('limit', max_limit),
                         marker=values.get('marker'),
                         sort_key=values.get('sort_key'),
                         sort_dir=values.get('sort_dir', 'asc'),
                         extra=extra)

    def parameters(self, max_limit):
        """The OpenAPI parameter objects of this query."""
        return query_parameters(self.declarations(max_limit),
                                self.descriptions)


class Parameters(dict):
    """The declarations of a query by parameter name, ``required`` ones
    among them (the document marks them so)."""

    def __init__(self, declarations, required=()):
        super().__init__(declarations)
        self.required = tuple(required)


def query_parameters(parameters, descriptions=None, required=()):
    """OpenAPI query parameter objects of ``parameters`` (name to declaration)."""
    result = []
    for name, declaration in parameters.items():
        parameter = {'name': name, 'in': 'query',
                     'required': name in required,
                     'schema': declaration.schema()}
        description = (descriptions or {}).get(name) or \
            parameter['schema'].pop('description', None)
        if description:
            parameter['description'] = description
        if isinstance(declaration, Repeated):
            parameter.update(style='form', explode=True)
        result.append(parameter)
    return result
