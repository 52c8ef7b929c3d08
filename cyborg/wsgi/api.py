"""The cyborg-api WSGI application for uwsgi, gunicorn or mod_wsgi.

Config files come from ``OS_CYBORG_CONFIG_FILES`` (';'-separated) or, when
it is unset, /etc/cyborg/cyborg.conf if that file exists.
"""

import os

from oslo_log import log

from cyborg.api import app
from cyborg import conf
from cyborg.conf import opts
from cyborg.db import api as db_api
from cyborg import objects
from cyborg import rpc

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
    objects.register_all()
    rpc.init(conf.CONF)
    db_api.configure(conf.CONF, wait_for_database=False)
    return app.setup_app(conf.CONF)
