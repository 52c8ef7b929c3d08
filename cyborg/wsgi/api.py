"""The cyborg-api WSGI application for uwsgi, gunicorn or mod_wsgi.

Servers that import a module attribute use ``cyborg.wsgi.api:application``
(uWSGI's ``module``, as DevStack configures it); ``init_application`` builds
a new application. Config files come from ``OS_CYBORG_CONFIG_FILES``
(';'-separated) or, when it is unset, /etc/cyborg/cyborg.conf if that file
exists.
"""

import os
import threading

from oslo_log import log

from cyborg.api import app
from cyborg import conf
from cyborg.conf import opts
from cyborg.conf import upstream as upstream_conf
from cyborg.db import api as db_api
from cyborg import objects
from cyborg import rpc
from cyborg import service

CONFIG_FILES_VARIABLE = 'OS_CYBORG_CONFIG_FILES'
DEFAULT_CONFIG_FILE = '/etc/cyborg/cyborg.conf'


def config_files(environ=None):
    """The config files to read, from the environment or the default path."""
    environ = os.environ if environ is None else environ
    value = environ.get(CONFIG_FILES_VARIABLE)
    if value:
        return [path.strip() for path in value.split(';') if path.strip()]
    if os.path.exists(DEFAULT_CONFIG_FILE):
        return [DEFAULT_CONFIG_FILE]
    return []


def init_application():
    """Read the configuration and return the WSGI application."""
    opts.set_defaults()
    log.register_options(conf.CONF)
    conf.CONF([], project='cyborg', default_config_files=config_files())
    log.setup(conf.CONF, 'cyborg')
    upstream_conf.warn_unknown_options(conf.CONF)
    objects.register_all()
    rpc.init(conf.CONF)
    db_api.configure(conf.CONF, wait_for_database=False)
    application = app.setup_app(conf.CONF)
    service.settle_heap()
    return application


class LazyApplication:
    """The application ``init_application`` returns, built at the first request.

    Importing this module (tests, tools) must not read the configuration;
    a WSGI server's worker builds the application once, when it is first
    called.
    """

    def __init__(self):
        self._application = None
        self._lock = threading.Lock()

    def __call__(self, environ, start_response):
        if self._application is None:
            with self._lock:
                if self._application is None:
                    self._application = init_application()
        return self._application(environ, start_response)


application = LazyApplication()
