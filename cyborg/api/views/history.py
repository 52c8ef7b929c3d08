"""A history (of a device or a deployable) as the API shows it, from
microversion 2.5: ``{"history": [entry, ...]}`` newest first, with a
``next`` link when the page is full.
"""

import urllib.parse

from cyborg.api.views import listing

RESOURCE = 'history'
# An entry's fields, in the order of the rows read
# (``cyborg.objects.history.FIELDS``), but the internal ids of the device
# and the deployable.
_HIDDEN = ('device_id', 'deployable_id')


def _entry(names, row):
    entry = {name: value for name, value in zip(names, row, strict=True)
             if name not in _HIDDEN}
    entry['created_at'] = listing.timestamp(entry['created_at'])
    entry.pop('updated_at', None)
    return entry


def collection(rows, fields, query, params, base_url, path):
    """``{"history": [...]}`` of ``rows`` (of ``fields``), and ``next``
    (``path`` with the query, ``marker`` the last entry's id) when the
    page is full."""
    items = [_entry(fields, row) for row in rows]
    body = {RESOURCE: items}
    if items and len(items) >= query.limit:
        next_params = [(name, value) for name, value in listing.flat(params)
                       if name not in ('marker', 'limit')]
        next_params += [('limit', str(query.limit)),
                        ('marker', str(items[-1]['id']))]
        body['next'] = '%s%s?%s' % (base_url, path,
                                    urllib.parse.urlencode(next_params))
    return body
