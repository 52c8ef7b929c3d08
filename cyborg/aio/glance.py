"""The real Glance (the ``glance`` package), embedded in a cyborg process.

The all-in-one serves it next to Placement, and functional tests serve it
through ``cyborg.tests.fixtures.glance``: Glance's own WSGI pipeline, its
own database migrations and its ``file`` store, served by
``cyborg.api.server`` on a local port, with an SQLite database and the
image files under ``<state_dir>/glance``.

No Keystone by default: the pipeline is Glance's no-auth flavour (its
``unauthenticated-context`` filter makes every request an administrator's
without roles or project), and Glance's legacy policy defaults
(``[oslo_policy] enforce_new_defaults = False``) let such a request create,
upload, tag, list and download images. Clients use ``auth_type = none``.

Given ``keystone_authtoken`` options, Glance runs its ``keystone``
flavour instead, for tests: keystonemiddleware's auth_token validates each
request's token against that Keystone and Glance's own context and policy
defaults decide, as in a deployment.

Unlike Placement, Glance reads ``oslo_config.cfg.CONF`` (the process's
global configuration, which is cyborg's): each Glance module binds it when
it is imported. So Glance's modules are imported with ``cfg.CONF``
replaced, for that moment only, by a ConfigOpts of Glance's own
(``glance_config``); setup code that looks ``cfg.CONF`` up when it runs
(oslo.db, oslo.middleware, keystonemiddleware) runs in the same window.
Glance's settings therefore never mix with cyborg's, but they are
process-wide: one Glance at a time per process.
"""

import contextlib
import importlib
import json
import logging
import os
import sys
import threading
import warnings

from alembic import command as alembic_command
from keystoneauth1 import loading as ks_loading
from keystonemiddleware import auth_token
from oslo_config import cfg
from oslo_db.sqlalchemy import enginefacade
import oslo_messaging
from oslo_policy import opts as policy_opts

from cyborg.api import server as api_server

LOG = logging.getLogger(__name__)

DIRECTORY = 'glance'
DATABASE_NAME = 'glance.sqlite'
# The store images go to, and Glance's two internal stores (staging for
# image import, tasks); each a directory of the state dir.
STORE = 'fs'
STORE_DIRECTORIES = {STORE: 'images', 'os_glance_staging_store': 'staging',
                     'os_glance_tasks_store': 'tasks'}
RESERVED_STORES = {'os_glance_staging_store': 'file',
                   'os_glance_tasks_store': 'file'}
PASTE_APP = 'glance-api'
KEYSTONE_FLAVOR = 'keystone'
AUTHTOKEN_GROUP = 'keystone_authtoken'

# Glance's own API pipelines: the factories are those of Glance's paste file
# (etc/glance-api-paste.ini), flavours "default" (no auth) and "keystone"
# without the CORS and profiler filters, which would read /etc/glance
# themselves.
PASTE_CONFIG = """\
[composite:glance-api]
paste.composite_factory = glance.api:root_app_factory
/: api

[composite:glance-api-keystone]
paste.composite_factory = glance.api:root_app_factory
/: api

[composite:api]
paste.composite_factory = glance.api:pipeline_factory
default = http_proxy_to_wsgi versionnegotiation unauthenticated-context rootapp
keystone = http_proxy_to_wsgi versionnegotiation authtoken context rootapp

[composite:rootapp]
paste.composite_factory = glance.api:root_app_factory
/: apiversions
/v2: apiv2app

[app:apiversions]
paste.app_factory = glance.api.versions:create_resource

[app:apiv2app]
paste.app_factory = glance.api.v2.router:API.factory

[filter:versionnegotiation]
paste.filter_factory = \
glance.api.middleware.version_negotiation:VersionNegotiationFilter.factory

[filter:unauthenticated-context]
paste.filter_factory = \
glance.api.middleware.context:UnauthenticatedContextMiddleware.factory

[filter:http_proxy_to_wsgi]
paste.filter_factory = oslo_middleware:HTTPProxyToWSGI.factory

[filter:authtoken]
paste.filter_factory = keystonemiddleware.auth_token:filter_factory
delay_auth_decision = true

[filter:context]
paste.filter_factory = glance.api.middleware.context:ContextMiddleware.factory
"""

CONFIG_FILE_TEXT = """\
# Written by cyborg at each start of the embedded Glance (cyborg.aio.glance),
# which sets its options itself; edits here are lost.
"""

# Glance's modules imported while cfg.CONF is Glance's configuration: every
# module the API, the file store and the migrations use, so that none is
# first imported later, when cfg.CONF is cyborg's again.
GLANCE_MODULES = (
    'glance.common.config',
    'glance.common.wsgi_app',
    'glance.api.common',
    'glance.api.versions',
    'glance.api.v2.router',
    'glance.api.middleware.context',
    'glance.api.middleware.version_negotiation',
    'glance.async_',
    'glance.db.migration',
    'glance.db.sqlalchemy.api',
    'glance.db.sqlalchemy.alembic_migrations',
    'glance.db.sqlalchemy.alembic_migrations.data_migrations',
    'glance.notifier',
    'glance_store',
    'glance_store._drivers.filesystem',
)

_CONFIG = None
_CONFIG_LOCK = threading.Lock()
# The auth plugin options registered on it for a Glance with Keystone.
_AUTH_PLUGIN_OPTS = []
# Held while a Glance runs: its settings are process-wide.
_RUNNING = threading.Lock()


def _glance(module):
    """An already imported module of Glance (imported by glance_config)."""
    return sys.modules[module]


@contextlib.contextmanager
def _as_global_config(config):
    """Make ``config`` oslo.config's ``cfg.CONF`` for the block's duration."""
    saved = cfg.CONF
    cfg.CONF = config
    try:
        yield
    finally:
        cfg.CONF = saved


def glance_config():
    """The ConfigOpts Glance's modules read, importing them the first time.

    :raises: RuntimeError when Glance was imported before, bound to the
        process's global configuration.
    """
    global _CONFIG
    with _CONFIG_LOCK:
        if _CONFIG is not None:
            return _CONFIG
        if 'glance.common.config' in sys.modules:
            raise RuntimeError(
                'Glance was imported before cyborg.aio.glance could give it '
                'a configuration of its own; it would share cyborg\'s')
        config = cfg.ConfigOpts()
        with _as_global_config(config):
            for module in GLANCE_MODULES:
                importlib.import_module(module)
            # oslo.messaging registers these on first use; Glance makes a
            # notifier per request, which must never reach a broker.
            oslo_messaging.get_notification_transport(config)
            policy_opts.set_defaults(config)
        _CONFIG = config
        return config


class StatePaths:
    """Where one Glance keeps its database, images and configuration."""

    def __init__(self, state_dir):
        self.root = os.path.join(os.path.abspath(state_dir), DIRECTORY)
        self.database = os.path.join(self.root, DATABASE_NAME)
        self.config_dir = os.path.join(self.root, 'etc')
        self.config_file = os.path.join(self.config_dir, 'glance-api.conf')
        self.paste_config = os.path.join(self.config_dir,
                                         'glance-api-paste.ini')
        self.stores = {store: os.path.join(self.root, directory)
                       for store, directory in STORE_DIRECTORIES.items()}

    @property
    def database_url(self):
        return 'sqlite:///' + self.database

    @property
    def images(self):
        """The directory of the image files (one file per image id)."""
        return self.stores[STORE]

    def write_config_files(self):
        """Write Glance's (empty) config file, paste pipeline and image schema.

        Glance looks ``schema-image.json`` up next to its config file and
        warns at start when there is none; an empty one means "no custom
        properties", as no file does.
        """
        os.makedirs(self.config_dir, mode=0o700, exist_ok=True)
        with open(self.config_file, 'w') as config_file:
            config_file.write(CONFIG_FILE_TEXT)
        with open(self.paste_config, 'w') as paste_file:
            paste_file.write(PASTE_CONFIG)
        with open(os.path.join(self.config_dir, 'schema-image.json'),
                  'w') as schema_file:
            json.dump({}, schema_file)


def configure(config, paths, keystone_authtoken=None):
    """Give Glance's ``config`` the settings of a Glance kept in ``paths``.

    Settings are overrides, so that no file can turn Keystone or another
    store on; whatever an earlier Glance of this process set is forgotten.
    With ``keystone_authtoken`` (that group's options), Glance validates
    tokens with keystonemiddleware and keeps its own policy defaults.
    """
    config.reset()
    _unregister_auth_plugin_opts(config)
    overrides = {
        None: {'enabled_backends': {STORE: 'file'},
               'transport_url': 'fake://'},
        'database': {'connection': paths.database_url},
        'paste_deploy': {'flavor': '', 'config_file': paths.paste_config},
        'oslo_policy': {'enforce_new_defaults': False},
        'oslo_messaging_notifications': {'driver': ['noop']},
    }
    if keystone_authtoken is not None:
        _register_authtoken_opts(config, keystone_authtoken)
        overrides['paste_deploy']['flavor'] = KEYSTONE_FLAVOR
        # Callers have roles and a project: Glance's own policy defaults.
        del overrides['oslo_policy']
        overrides[AUTHTOKEN_GROUP] = dict(keystone_authtoken)
    for group, values in overrides.items():
        for name, value in values.items():
            config.set_override(name, value, group=group)
    # Only the state dir's file: no command line, no /etc/glance.
    config([], project='glance', prog='glance-api',
           default_config_files=[paths.config_file], default_config_dirs=[])
    glance_store = _glance('glance_store')
    with without_stevedore_lines('os_brick'):
        glance_store.register_store_opts(config,
                                         reserved_stores=RESERVED_STORES)
    config.set_override('default_backend', STORE, group='glance_store')
    for store, directory in paths.stores.items():
        config.set_override('filesystem_store_datadir', directory,
                            group=store)


def _register_authtoken_opts(config, keystone_authtoken):
    """keystonemiddleware's options, and its auth plugin's, on ``config``.

    keystonemiddleware registers its own on the ConfigOpts that was
    ``cfg.CONF`` when it was imported (cyborg's) but reads the one that is
    ``cfg.CONF`` when Glance's pipeline is built (Glance's); it registers
    the plugin's when it loads the plugin, after the overrides are set.
    """
    for group, opts in auth_token.list_opts():
        config.register_opts(opts, group=group)
    ks_loading.register_auth_conf_options(config, AUTHTOKEN_GROUP)
    auth_type = keystone_authtoken.get('auth_type')
    if auth_type:
        plugin_opts = ks_loading.get_auth_plugin_conf_options(auth_type)
        config.register_opts(plugin_opts, group=AUTHTOKEN_GROUP)
        _AUTH_PLUGIN_OPTS.extend(plugin_opts)


def _unregister_auth_plugin_opts(config):
    """Forget the auth plugin's options an earlier Glance registered.

    Some are required (``auth_url``): a Glance without Keystone would fail
    to load its configuration. ``config`` must have been reset.
    """
    while _AUTH_PLUGIN_OPTS:
        config.unregister_opt(_AUTH_PLUGIN_OPTS.pop(), group=AUTHTOKEN_GROUP)


class _DroppedLines(logging.Filter):
    """Drops the records whose message holds ``fragment``."""

    def __init__(self, fragment):
        super().__init__()
        self.fragment = fragment

    def filter(self, record):
        return self.fragment not in record.getMessage()


@contextlib.contextmanager
def without_stevedore_lines(fragment):
    """Drop stevedore's log lines holding ``fragment`` meanwhile.

    A library that loads every driver of a namespace to list their options
    (glance_store's cinder store needs os-brick; dogpile.cache's memcache
    backend needs python-memcached) makes stevedore log an error for each
    one whose dependency is missing, though nobody uses it.
    """
    dropped = _DroppedLines(fragment)
    stevedore_logger = logging.getLogger('stevedore.extension')
    stevedore_logger.addFilter(dropped)
    try:
        yield
    finally:
        stevedore_logger.removeFilter(dropped)


@contextlib.contextmanager
def _quiet(logger_name):
    """Log only warnings and errors of ``logger_name`` within the block."""
    logger = logging.getLogger(logger_name)
    level = logger.level
    logger.setLevel(max(level, logging.WARNING))
    try:
        yield
    finally:
        logger.setLevel(level)


def create_stores(config):
    """Load the file stores (images, staging, tasks); check the default."""
    glance_store = _glance('glance_store')
    with without_stevedore_lines('os_brick'):
        glance_store.create_multi_stores(config,
                                         reserved_stores=RESERVED_STORES)
    glance_store.verify_store()


def open_database(database_url):
    """Point Glance's engine facade at ``database_url``; return the undo.

    The returned callable puts Glance's facade back and closes the
    connections; call it when this Glance stops.
    """
    facade = enginefacade.transaction_context()
    facade.configure(connection=database_url, sqlite_fk=True)
    db_api = _glance('glance.db.sqlalchemy.api')
    restore = db_api._get_main_context_manager().patch_factory(facade)
    # Started now, while cfg.CONF is Glance's: oslo.db reads it then.
    facade.writer.get_engine()

    def close():
        restore()
        facade.dispose_pool()
    return close


def sync_database():
    """Migrate Glance's database to the newest revision, as db_sync does.

    ``glance-manage db_sync``: expand, migrate the data, contract. Alembic's
    line per revision (forty-odd on a new database) is left out: one line
    says where the database is.
    """
    with _quiet('alembic.runtime.migration'):
        revision = _migrate()
    LOG.info('Glance database is at revision %s', revision)
    return revision


def _migrate():
    """The steps of db_sync; return the contract branch's head revision.

    Glance's alembic environment takes oslo.db's global facade, which is
    pointed at Glance's engine for the duration.
    """
    db_api = _glance('glance.db.sqlalchemy.api')
    migrations = _glance('glance.db.sqlalchemy.alembic_migrations')
    data_migrations = _glance(
        'glance.db.sqlalchemy.alembic_migrations.data_migrations')
    branches = _glance('glance.db.migration')
    engine = db_api.get_engine()
    expand = migrations.get_alembic_branch_head(branches.EXPAND_BRANCH)
    contract = migrations.get_alembic_branch_head(branches.CONTRACT_BRANCH)
    if contract in migrations.get_current_alembic_heads():
        return contract
    restore = enginefacade._context_manager.patch_engine(engine)
    try:
        with warnings.catch_warnings():
            # SQLite table copies of old migrations; not ours to name.
            warnings.filterwarnings('ignore', message='Unnamed CHECK',
                                    category=UserWarning)
            alembic_command.upgrade(migrations.get_alembic_config(engine),
                                    expand)
            if data_migrations.has_pending_migrations(engine):
                data_migrations.migrate(engine)
            alembic_command.upgrade(migrations.get_alembic_config(engine),
                                    contract)
    finally:
        restore()
    return contract


def load_app(config):
    """Glance's API pipeline, ready to serve, from its paste file."""
    glance_async = _glance('glance.async_')
    # Served by threads, as under uWSGI: Glance's own wsgi_app does this.
    glance_async.set_threadpool_model('native')
    _glance('glance.api.common').DEFAULT_POOL_SIZE = (
        config.wsgi.task_pool_threads)
    app = _glance('glance.common.config').load_paste_app(PASTE_APP)
    return KeepInputOpen(app)


class KeepInputOpen:
    """WSGI middleware: the request body's ``close`` does not end the
    connection.

    Glance closes the stream it reads an image upload from; under cheroot
    the ``close`` of a chunked body closes the connection's socket file,
    and the next request of a kept-alive connection would fail.
    """

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        environ['wsgi.input'] = _UncloseableInput(environ['wsgi.input'])
        return self.app(environ, start_response)


class _UncloseableInput:
    """A request body whose ``close`` does nothing."""

    def __init__(self, stream):
        self._stream = stream

    def close(self):
        pass

    def __getattr__(self, name):
        return getattr(self._stream, name)

    def __iter__(self):
        return iter(self._stream)


class EmbeddedGlance:
    """Glance on ``host:port``, its state in ``<state_dir>/glance``.

    One per process may run at a time (Glance's settings are global).
    ``keystone_authtoken``: see ``configure``; None (no Keystone) for the
    all-in-one.
    """

    def __init__(self, state_dir, host='127.0.0.1', port=9292, threads=None,
                 keystone_authtoken=None):
        self.paths = StatePaths(state_dir)
        self.host = host
        self.port = port
        self.threads = threads
        self.keystone_authtoken = keystone_authtoken
        self._server = None
        self._close_database = None
        self._running = False

    @property
    def endpoint(self):
        """The URL clients use, with the port actually bound."""
        return 'http://%s:%s' % (self.host, self.port)

    def start(self):
        """Configure Glance, migrate its database and serve its API."""
        if not _RUNNING.acquire(blocking=False):
            raise RuntimeError('A Glance already runs in this process')
        self._running = True
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        LOG.info('Glance listening on %s, images in %s', self.endpoint,
                 self.paths.images)
        return self.endpoint

    def _start(self):
        config = glance_config()
        self.paths.write_config_files()
        with _as_global_config(config):
            configure(config, self.paths, self.keystone_authtoken)
            create_stores(config)
            self._close_database = open_database(self.paths.database_url)
            sync_database()
            app = load_app(config)
        self._server = api_server.Server(app, self.host, self.port,
                                         threads=self.threads, name='glance',
                                         option='[aio] glance_port')
        self._server.start()
        self.port = self._server.port
        # Where other API workers reach this one (image import).
        config.set_override('worker_self_reference_url', self.endpoint)

    def stop(self):
        """Stop serving (requests in progress finish first), release Glance."""
        if not self._running:
            return
        try:
            if self._server is not None:
                self._server.stop()
                self._server = None
        finally:
            if self._close_database is not None:
                self._close_database()
                self._close_database = None
            self._running = False
            _RUNNING.release()
