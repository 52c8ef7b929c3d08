"""Shared rendering of list responses: timestamps, links and the ``next`` link.

Every function building a URL takes ``base_url``, the request's
(``request.base_url``, see ``cyborg.api.links``).
"""

import datetime
import operator
import urllib.parse

from cyborg.api import links
from cyborg.api import responses


def timestamp(value):
    """A datetime as the value of a timestamp field, or None.

    The text is ISO 8601 to whole seconds in UTC, ``+00:00``: an answer
    built from a new object and one read back from the database give the
    same text. A naive datetime (a database row's, UTC as the objects'
    fields assume) is given as it is: the answer's encoder writes it as
    that text (``cyborg.api.responses``), in C with orjson, so a list of
    PostgreSQL rows carries its datetimes to the encoder untouched.

    A list page's rows need none of this, and the lists put their
    timestamps in as they are (a call per value costs a 1,000-row page a
    fifth of a millisecond): ``rows.rendered`` makes them the API's text,
    or on PostgreSQL naive UTC datetimes, which the encoder writes as the
    same text (``test_list_matches_show`` holds a list row to the bytes of
    its object on the three backends).
    """
    if value is None or type(value) is not datetime.datetime:
        # None, or a list row's text (``rows.rendered``: the database
        # formatted it the same way).
        return value
    if value.tzinfo is None:
        return value
    # orjson would write another offset as it is: the text, in UTC.
    return responses.iso_seconds(value)


def values_of(rows, names, fields=None):
    """Each of ``rows`` (of one statement: SQLAlchemy's rows, or the tuples
    of a plain page, ``cyborg.db.queries.lean.Page``) as the tuple of its
    ``names`` columns, in that order. ``fields`` names the rows' columns
    (by default the page's ``fields``, else its first row's).

    Reading a row by attribute costs SQLAlchemy a microsecond or more per
    column, by position a tenth of that: a list reads each row once, here.
    Rows whose columns are ``names``, in that order, are given as they are
    (a list unpacks them straight).
    """
    if not rows:
        return []
    if fields is None:
        fields = getattr(rows, 'fields', None) or rows[0]._fields
    if tuple(fields) == tuple(names):
        return rows
    return map(operator.itemgetter(*[fields.index(name) for name in names]),
               rows)


def link_maker(resource, base_url):
    """A function of a uuid returning its ``links`` list, as ``links.make_links``.

    The URL prefixes are built once, not once per row of a page.
    """
    self_prefix = links.build_url(base_url, resource, '')
    bookmark_prefix = links.build_url(base_url, resource, '', bookmark=True)

    def make(uuid):
        return [{'href': self_prefix + uuid, 'rel': 'self'},
                {'href': bookmark_prefix + uuid, 'rel': 'bookmark'}]
    return make


def collection(resource, items, query, params, base_url):
    """``{resource: items}`` plus ``next`` when the page is full.

    ``next`` repeats the request's query string with ``marker`` set to the
    last item's uuid and ``limit`` to the page size; openstacksdk follows it.
    """
    body = {resource: items}
    if items and len(items) >= query.limit:
        next_params = [(name, value) for name, value in flat(params)
                       if name not in ('marker', 'limit')]
        next_params += [('limit', str(query.limit)),
                        ('marker', items[-1]['uuid'])]
        body['next'] = '%s/v2/%s?%s' % (
            base_url, resource,
            urllib.parse.urlencode(next_params))
    return body


def flat(params):
    """The query ``params`` as (name, value) pairs, by name, each value of
    a repeated parameter apart."""
    for name in sorted(params):
        values = params[name]
        if not isinstance(values, (list, tuple)):
            values = [values]
        for value in values:
            yield name, value
