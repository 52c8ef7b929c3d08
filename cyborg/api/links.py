"""Absolute URLs in responses: the service's base URL and resource links.

The base is [api] public_endpoint when set, otherwise the request's scheme,
host and mount prefix (script name); a proxy's X-Forwarded-* headers are
already folded into those by HTTPProxyToWSGI (see ``cyborg.api.app``).
"""

import pecan

from cyborg import conf


def base_url(request=None):
    """The URL the service is reached at, without a trailing slash."""
    public_endpoint = conf.CONF.api.public_endpoint
    if public_endpoint:
        return public_endpoint.rstrip('/')
    request = pecan.request if request is None else request
    return (request.host_url + request.script_name).rstrip('/')


def build_url(resource, uuid, bookmark=False, request=None):
    """The link of one object: ``<base>/v2/<resource>/<uuid>``.

    A bookmark link leaves out the version: ``<base>/<resource>/<uuid>``.
    """
    version_part = '' if bookmark else '/v2'
    return '%s%s/%s/%s' % (base_url(request), version_part, resource, uuid)


def make_links(resource, uuid, bookmark=True, request=None):
    """The ``links`` list of one object: self and, usually, bookmark."""
    links = [{'href': build_url(resource, uuid, request=request),
              'rel': 'self'}]
    if bookmark:
        links.append({'href': build_url(resource, uuid, bookmark=True,
                                        request=request),
                      'rel': 'bookmark'})
    return links
