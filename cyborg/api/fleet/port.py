"""The fleet page's own port ([api] fleet_page_port), for browsers.

Chromium and Firefox refuse to open ports 6665-6669 (``ERR_UNSAFE_PORT``),
and 6666 is the API's: a browser cannot open the page there. So cyborg-api
and the all-in-one can listen on a second port that serves the page and
the data its script fetches (the same WSGI application, so the same
authentication and policy) and nothing else: the API stays on its port.
The all-in-one's default is 6680, which neither browser restricts.
"""

import logging

from cyborg.api import fleet
from cyborg.api import hooks
from cyborg.api import server

LOG = logging.getLogger(__name__)

# Request threads of the page's server: a few browsers refreshing a page.
THREADS = 4


class PageOnly:
    """The WSGI application ``application`` answering the fleet page's
    paths only: ``/`` redirects to ``/v2/fleet``, any other path is a 404
    naming the port the API is on."""

    def __init__(self, application, api_port):
        self._application = application
        self._message = ('This port serves only the fleet page, /v2/fleet; '
                         'the API is on port %s.' % api_port)

    def __call__(self, environ, start_response):
        path = environ.get('PATH_INFO', '')
        if path.rstrip('/') in fleet.PATHS:
            environ['PATH_INFO'] = path.rstrip('/')
            return self._application(environ, start_response)
        if path in ('', '/'):
            query = environ.get('QUERY_STRING', '')
            location = '/v2/fleet' + ('?' + query if query else '')
            start_response('302 Found', [('Location', location),
                                         ('Content-Length', '0')])
            return [b'']
        return hooks.error_response(404, self._message)(environ,
                                                        start_response)


def page_server(conf, application):
    """The server of the fleet page on [api] host_ip and fleet_page_port,
    serving ``application`` (cyborg-api's); None when the option is unset.
    """
    port = conf.api.fleet_page_port
    if port is None:
        return None
    return server.Server(
        PageOnly(application, conf.api.port), conf.api.host_ip, port,
        threads=THREADS, name='fleet page', option='[api] fleet_page_port')


def address(host, port, path='/v2/fleet'):
    """The URL of ``path`` (the page's by default) on a server of ``host``
    and ``port``, for the log: a server of every address (0.0.0.0) is
    named by 127.0.0.1."""
    return 'http://%s:%s%s' % (
        '127.0.0.1' if host in ('0.0.0.0', '::', '') else host, port, path)
