"""The fleet page: one HTML document with its CSS and JavaScript inlined,
served by GET /v2/fleet to a browser.

The page holds no data: its script fetches the same URL with
``Accept: application/json`` (``cyborg.api.controllers.v2.fleet``), every
few seconds. A browser cannot add a token to a navigation, so the page
itself is served without one (``cyborg.api.auth`` asks ``is_page_request``);
behind Keystone the user pastes a token, which the script sends as
X-Auth-Token. ``page.html``, ``page.css`` and ``page.js`` ship in the
package (MANIFEST.in), with no build step and nothing from another site.
"""

import functools
import pathlib

from webob import acceptparse

# The paths of the page, relative to the mount point (the unversioned one
# too, before cyborg.api.app.UnversionedPaths rewrites it).
PATHS = frozenset(['/v2/fleet', '/fleet'])
HTML = 'text/html'
JSON = 'application/json'
# JSON first: it wins a tie (no Accept, or */*), as for every other route.
_OFFERS = (JSON, HTML)
_DIRECTORY = pathlib.Path(__file__).resolve().parent


def wants_html(accept):
    """Whether the Accept header ``accept`` (None: none sent) prefers the
    page to the JSON: a browser's navigation does, a script or curl does
    not."""
    offers = acceptparse.create_accept_header(accept).acceptable_offers(
        list(_OFFERS))
    return bool(offers) and offers[0][0] == HTML


def is_page_request(environ):
    """Whether the WSGI request ``environ`` asks for the page itself."""
    return (environ.get('REQUEST_METHOD') == 'GET'
            and environ.get('PATH_INFO', '') in PATHS
            and wants_html(environ.get('HTTP_ACCEPT')))


@functools.lru_cache(maxsize=1)
def page():
    """The HTML of the page, its stylesheet and script inlined (UTF-8)."""
    html = (_DIRECTORY / 'page.html').read_text(encoding='utf-8')
    css = (_DIRECTORY / 'page.css').read_text(encoding='utf-8')
    script = (_DIRECTORY / 'page.js').read_text(encoding='utf-8')
    return html.replace('/*PAGE_CSS*/', css).replace('/*PAGE_JS*/', script)
