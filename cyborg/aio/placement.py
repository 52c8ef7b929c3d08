"""The real openstack-placement, embedded in the all-in-one process.

Placement is configured on a ConfigOpts object of its own (never cyborg's
CONF), with no Keystone (``noauth2``) and an SQLite file in the state dir,
and its own WSGI app is served on a local port by ``cyborg.api.server``.
"""

import logging
import os

from oslo_config import cfg
from placement import conf as placement_conf
from placement import db_api as placement_db
from placement.db.sqlalchemy import migration as placement_migration
from placement import deploy as placement_deploy

from cyborg.api import server as api_server

LOG = logging.getLogger(__name__)

DATABASE_NAME = 'placement.sqlite'


def database_url(state_dir):
    """The SQLite URL of the Placement database kept in ``state_dir``."""
    return 'sqlite:///' + os.path.join(os.path.abspath(state_dir),
                                       DATABASE_NAME)


def make_config(connection):
    """A parsed Placement configuration using ``connection`` and no Keystone."""
    config = cfg.ConfigOpts()
    placement_conf.register_opts(config)
    # Overrides, not defaults: nothing else may turn Keystone back on here.
    config.set_override('auth_strategy', 'noauth2', group='api')
    config.set_override('connection', connection, group='placement_database')
    # An empty argument list and no files: Placement must not read the
    # command line or /etc/placement of the process embedding it.
    config([], project='placement', default_config_files=[],
           default_config_dirs=[])
    return config


def sync_database(config):
    """Point Placement's engine facade at ``config`` and migrate to head.

    Placement configures its engine facade once per process; the all-in-one
    calls this once, tests use ``cyborg.tests.fixtures.placement`` instead.
    """
    placement_db.configure(config)
    placement_migration.upgrade('head')


def load_app(config):
    """Placement's own WSGI pipeline (noauth2, microversions, policy)."""
    return placement_deploy.loadapp(config)


class EmbeddedPlacement:
    """Placement on ``host:port``, with its database in ``state_dir``."""

    def __init__(self, state_dir, host='127.0.0.1', port=8778, threads=None):
        self.state_dir = state_dir
        self.host = host
        self.port = port
        self.threads = threads
        self._server = None

    @property
    def endpoint(self):
        """The URL clients use, with the port actually bound."""
        return 'http://%s:%s' % (self.host, self.port)

    def start(self):
        """Migrate the database, build the app and start serving it."""
        config = make_config(database_url(self.state_dir))
        sync_database(config)
        app = load_app(config)
        self._server = api_server.Server(app, self.host, self.port,
                                         threads=self.threads,
                                         name='placement',
                                         option='[aio] placement_port')
        self._server.start()
        self.port = self._server.port
        LOG.info('Placement listening on %s', self.endpoint)
        return self.endpoint

    def stop(self):
        """Stop serving; requests in progress finish first."""
        if self._server is not None:
            self._server.stop()
            self._server = None
