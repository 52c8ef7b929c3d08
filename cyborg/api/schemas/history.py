"""Validation of the query of GET /v2/devices/{uuid}/history and
/v2/deployables/{uuid}/history (microversion 2.5): ``limit`` and
``marker``, nothing else.

An entry has no uuid: ``marker`` is the ``id`` of the last entry of the
previous page (the ``next`` link sets it); the order is newest first.
"""

from cyborg.api.schemas import declarations
from cyborg.api.schemas import listing

# The largest id an entry may have: a signed 64-bit integer.
MAX_ID = 2 ** 63 - 1

MARKER = declarations.Integer(
    minimum=1, maximum=MAX_ID, text=True,
    description='The ``id`` of the last entry of the previous page (from '
                'the ``next`` link): the page holds the entries older '
                'than it.',
    messages=dict.fromkeys(
        ('type', 'minimum', 'maximum'),
        '{name} must be an entry id from {minimum} to {maximum}, not '
        '{value!r}'))


class HistoryListing(listing.Listing):
    """The query of a history: a page size and a marker."""

    def __init__(self):
        super().__init__(filters={}, sort_keys=())

    def declarations(self, max_limit):
        return {'limit': listing.limit_value(max_limit), 'marker': MARKER}

    def parse(self, params, max_limit):
        """A ``listing.ListQuery`` with ``limit`` (default ``max_limit``)
        and ``marker`` (an int, or None).

        :raises: exception.InvalidParameterValue (400)
        """
        parameters = self.declarations(max_limit)
        unknown = sorted(set(params) - set(parameters))
        if unknown:
            raise declarations.invalid('Unknown query parameter %s'
                                       % ', '.join(unknown))
        values = {name: parameters[name].parse(
                      name, listing.single(name, params[name]))
                  for name in parameters if name in params}
        return listing.ListQuery(filters={},
                                 limit=values.get('limit', max_limit),
                                 marker=values.get('marker'))


LISTING = HistoryListing()


def list_query(params, max_limit):
    """The validated query of a history GET.

    :raises: exception.InvalidParameterValue (400)
    """
    return LISTING.parse(params, max_limit)
