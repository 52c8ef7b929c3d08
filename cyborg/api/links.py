"""Absolute URLs in responses: the service's base URL and resource links.

The base is [api] public_endpoint when set, otherwise the request's scheme,
host and mount prefix (script name); a proxy's X-Forwarded-* headers are
already folded into those by HTTPProxyToWSGI (see ``cyborg.api.app``).
``cyborg.api.hooks.SettingsHook`` computes it once per request
(``request.base_url``); views and controllers hand it to the functions here.
"""


def base_url(request, public_endpoint=None):
    """The URL ``request`` reached the service at, without a trailing slash.

    ``public_endpoint`` ([api] public_endpoint), when set, wins over the
    request's own URL.
    """
    if public_endpoint:
        return public_endpoint.rstrip('/')
    return (request.host_url + request.script_name).rstrip('/')


def build_url(base, resource, uuid, bookmark=False):
    """The link of one object: ``<base>/v2/<resource>/<uuid>``.

    A bookmark link leaves out the version: ``<base>/<resource>/<uuid>``.
    """
    version_part = '' if bookmark else '/v2'
    return '%s%s/%s/%s' % (base, version_part, resource, uuid)


def make_links(base, resource, uuid, bookmark=True):
    """The ``links`` list of one object: self and, usually, bookmark."""
    links = [{'href': build_url(base, resource, uuid), 'rel': 'self'}]
    if bookmark:
        links.append({'href': build_url(base, resource, uuid, bookmark=True),
                      'rel': 'bookmark'})
    return links
