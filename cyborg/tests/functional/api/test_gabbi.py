"""Gabbi tests of the API against the real WSGI application (noauth mode).

Each YAML file of ``gabbits/`` is one ordered suite (stestr keeps a file in
one worker). ``gabbits-mounted/`` runs with the application mounted under
/accelerator, as a web server would mount it.
"""

import os
import urllib.parse

import requests
from gabbi import driver

from cyborg.api import app
from cyborg.tests.fixtures import api as api_fixtures

HERE = os.path.dirname(__file__)
GABBITS = os.path.join(HERE, 'gabbits')
MOUNTED_GABBITS = os.path.join(HERE, 'gabbits-mounted')
MOUNT_POINT = '/accelerator'


class Mounted:
    """Serves ``application`` under ``mount_point``, as uwsgi's mount does."""

    def __init__(self, mount_point, application):
        self.mount_point = mount_point
        self.application = application

    def __call__(self, environ, start_response):
        path = environ.get('PATH_INFO', '')
        if path != self.mount_point and not path.startswith(
                self.mount_point + '/'):
            start_response('404 Not Found', [('Content-Type', 'text/plain')])
            return [b'not under the mount point\n']
        environ['SCRIPT_NAME'] = environ.get('SCRIPT_NAME', '') + \
            self.mount_point
        environ['PATH_INFO'] = path[len(self.mount_point):]
        return self.application(environ, start_response)


class BuiltPerRequest:
    """Builds the application for each request, from the configuration then.

    gabbi calls the intercept function when it loads the tests, before the
    fixtures of a file have configured cyborg.
    """

    def __init__(self, factory):
        self.factory = factory

    def __call__(self, environ, start_response):
        return self.factory()(environ, start_response)


class PlacementForwarded:
    """Sends requests for Placement's host over HTTP, the rest to ``application``.

    gabbi hands every request, whatever the host of its URL, to the
    intercepted application; a file whose fixtures serve Placement
    (``PLACEMENT_URL``) can still check what the conductor did there.
    """

    # Hop-by-hop and re-encoded headers are not copied from Placement's answer.
    _DROPPED_HEADERS = ('connection', 'content-encoding', 'content-length',
                        'transfer-encoding', 'keep-alive')

    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        placement_url = os.environ.get('PLACEMENT_URL')
        if not placement_url or environ.get('HTTP_HOST') != \
                urllib.parse.urlsplit(placement_url).netloc:
            return self.application(environ, start_response)
        headers = {name[5:].replace('_', '-'): value
                   for name, value in environ.items()
                   if name.startswith('HTTP_')}
        if environ.get('CONTENT_TYPE'):
            headers['CONTENT-TYPE'] = environ['CONTENT_TYPE']
        length = int(environ.get('CONTENT_LENGTH') or 0)
        body = environ['wsgi.input'].read(length) if length else None
        url = '%s%s' % (placement_url.rstrip('/'), environ['PATH_INFO'])
        if environ.get('QUERY_STRING'):
            url += '?' + environ['QUERY_STRING']
        response = requests.request(environ['REQUEST_METHOD'], url,
                                    headers=headers, data=body, timeout=30)
        start_response('%d %s' % (response.status_code, response.reason),
                       [(name, value) for name, value in
                        response.headers.items()
                        if name.lower() not in self._DROPPED_HEADERS])
        return [response.content]


def setup_app():
    """The application as cyborg-api serves it."""
    return PlacementForwarded(BuiltPerRequest(app.setup_app))


def setup_mounted_app():
    """The application mounted under MOUNT_POINT."""
    return BuiltPerRequest(lambda: Mounted(MOUNT_POINT, app.setup_app()))


def load_tests(loader, tests, pattern):
    """Build one test suite per YAML file."""
    suite = driver.build_tests(GABBITS, loader, intercept=setup_app,
                               test_loader_name=__name__,
                               fixture_module=api_fixtures)
    suite.addTests(driver.build_tests(MOUNTED_GABBITS, loader,
                                      intercept=setup_mounted_app,
                                      test_loader_name=__name__,
                                      fixture_module=api_fixtures))
    return suite
