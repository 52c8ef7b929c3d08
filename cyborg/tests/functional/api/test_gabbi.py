"""Gabbi tests of the API against the real WSGI application (noauth mode).

Each YAML file of ``gabbits/`` is one ordered suite (stestr keeps a file in
one worker). ``gabbits-mounted/`` runs with the application mounted under
/accelerator, as a web server would mount it.
"""

import os

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


def setup_app():
    """The application as cyborg-api serves it."""
    return BuiltPerRequest(app.setup_app)


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
