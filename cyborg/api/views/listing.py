"""Shared rendering of list responses: timestamps and the ``next`` link."""

import urllib.parse

from cyborg.api import links


def timestamp(value):
    """A datetime as ISO 8601 text, or None."""
    return None if value is None else value.isoformat()


def collection(resource, items, query, params, request=None):
    """``{resource: items}`` plus ``next`` when the page is full.

    ``next`` repeats the request's query string with ``marker`` set to the
    last item's uuid and ``limit`` to the page size; openstacksdk follows it.
    """
    body = {resource: items}
    if items and len(items) >= query.limit:
        next_params = [(name, value) for name, value in _flat(params)
                       if name not in ('marker', 'limit')]
        next_params += [('limit', str(query.limit)),
                        ('marker', items[-1]['uuid'])]
        body['next'] = '%s/v2/%s?%s' % (
            links.base_url(request), resource,
            urllib.parse.urlencode(next_params))
    return body


def _flat(params):
    for name in sorted(params):
        values = params[name]
        if not isinstance(values, (list, tuple)):
            values = [values]
        for value in values:
            yield name, value
