"""Gabbi tests of the API against the real WSGI application (noauth mode).

Each YAML file of ``gabbits/`` is one ordered suite (stestr keeps a file in
one worker) and runs once per database backend: SQLite, MariaDB/MySQL and
PostgreSQL, each run on a database of its own. A test's name starts with
its backend: ``test_gabbi.<backend>.<file>_<test>``. ``gabbits-mounted/``
runs with the application mounted under /accelerator, as a web server would
mount it, on SQLite only.
"""

import os
import types
import urllib.parse

import requests
from gabbi import driver
from gabbi import fixture as gabbi_fixture

from cyborg.api import app
from cyborg.tests.fixtures import api as api_fixtures
from cyborg.tests.fixtures import database

HERE = os.path.dirname(__file__)
GABBITS = os.path.join(HERE, 'gabbits')
MOUNTED_GABBITS = os.path.join(HERE, 'gabbits-mounted')
MOUNT_POINT = '/accelerator'

# Files of gabbits/ whose requests never reach the database (version
# documents, routing errors, the health check, proxy headers). They run on
# SQLite only, and there on an empty database, so that a request added to
# one of them that does need the database fails until the file leaves
# this set.
DATABASE_FREE = frozenset({'endpoint', 'errors', 'healthcheck',
                           'microversions', 'noproxy', 'unversioned',
                           'versions'})

# Tests failing on one backend for a known bug not fixed yet, skipped there
# with the reason: (backend, file, test name) -> reason.
KNOWN_BACKEND_BUGS = {}


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


class ServerPath:
    """PATH_INFO as a WSGI server passes it (PEP 3333): its bytes as latin-1.

    httpx's WSGI transport, which gabbi's intercept uses, passes the path
    decoded as UTF-8 instead, which WebOb cannot read back for a character
    beyond latin-1 (an emoji in a path).
    """

    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        environ['PATH_INFO'] = environ.get('PATH_INFO', '').encode(
            'utf-8').decode('latin-1')
        return self.application(environ, start_response)


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
    return PlacementForwarded(ServerPath(BuiltPerRequest(app.setup_app)))


def setup_mounted_app():
    """The application mounted under MOUNT_POINT."""
    return ServerPath(BuiltPerRequest(
        lambda: Mounted(MOUNT_POINT, app.setup_app())))


def _fixture_module(backend, schema='migrations'):
    """api_fixtures' gabbi fixtures, with an APIFixture on ``backend``."""
    found = {name: value for name, value in vars(api_fixtures).items()
             if isinstance(value, type)
             and issubclass(value, gabbi_fixture.GabbiFixture)}
    found['APIFixture'] = api_fixtures.api_fixture_on(backend, schema)
    return types.SimpleNamespace(**found)


def file_suites(loader, backend, schema, wanted, name=None):
    """The suites of the gabbits/ files for which ``wanted(stem)`` is true,
    each file's APIFixture on a database of ``backend`` with ``schema``.

    Test names start with ``name`` (default: this module's name and the
    backend); another module running the files on another server of the
    same backend (a Galera cluster) names its own, so that no two tests
    share an id.
    """
    if name is None:
        name = '%s.%s' % (__name__, backend)
    suite = driver.build_tests(GABBITS, loader, intercept=setup_app,
                               test_loader_name=name,
                               fixture_module=_fixture_module(backend, schema))
    # One GabbiSuite per file; its tests carry the file's stem.
    chosen = [file_suite for file_suite in suite
              if file_suite.countTestCases()
              and wanted(next(iter(file_suite)).test_base_name)]
    for file_suite in chosen:
        for test in file_suite:
            reason = KNOWN_BACKEND_BUGS.get(
                (backend, test.test_base_name, test.test_data['name']))
            if reason:
                test.test_data['skip'] = reason
    return chosen


def load_tests(loader, tests, pattern):
    """Build one test suite per YAML file and database backend."""
    suite = loader.suiteClass()
    suite.addTests(file_suites(
        loader, 'sqlite', 'migrations',
        lambda stem: stem not in DATABASE_FREE))
    suite.addTests(file_suites(
        loader, 'sqlite', None, lambda stem: stem in DATABASE_FREE))
    for backend in database.BACKENDS:
        if backend != 'sqlite':
            suite.addTests(file_suites(
                loader, backend, 'migrations',
                lambda stem: stem not in DATABASE_FREE))
    suite.addTests(driver.build_tests(
        MOUNTED_GABBITS, loader, intercept=setup_mounted_app,
        test_loader_name='%s.sqlite' % __name__,
        fixture_module=_fixture_module('sqlite')))
    return suite
