"""A simulated fleet served in this process: cyborg's database,
Placement, a conductor reached by local dispatch and cyborg-api.

``Fleet`` starts them, ``bench_reports`` times each host's first and
unchanged inventory report through them, and ``database`` makes (and
drops) the database a run writes. ``inventory.py`` and ``floor.py`` use
them, as does ``inventory.py --fleet-reports`` (``bench.fleet_reports``).
"""

# cyborg first: importing it selects oslo.service's threading backend, which
# oslo_messaging would otherwise set to eventlet.
import cyborg  # noqa: F401

import contextlib
import os
import statistics
import threading
import time

import sqlalchemy as sa
import yaml
from oslo_messaging import conffixture

from cyborg.agent.drivers import base as drivers_base
from cyborg.agent.drivers import fake
from cyborg.aio import placement as aio_placement
from cyborg.api import app as api_app
from cyborg.api import server as api_server
from cyborg.clients import placement as placement_client
from cyborg import conf
from cyborg.conductor import manager as conductor_manager
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg import context as cyborg_context
from cyborg.db import api as db_api
from cyborg.db import migration
from cyborg import rpc

import bench

DRIVER_NAME = 'fake_driver'
CONDUCTOR_HOST = 'bench-conductor'
# Transaction control (SQLite's BEGIN) is not counted as a statement.
TRANSACTION_CONTROL = ('BEGIN', 'COMMIT', 'ROLLBACK', 'SAVEPOINT', 'RELEASE')


def timing_line(name, seconds, total=False):
    """One line: count, median and p95 in milliseconds (and the total)."""
    line = '%-46s n=%-5d median=%9.2f ms  p95=%9.2f ms' % (
        name, len(seconds), statistics.median(seconds) * 1000,
        bench.percentile(seconds, 0.95) * 1000)
    if total:
        line += '  total=%8.2f s' % sum(seconds)
    return line


def count_line(name, counts):
    """One line: median and maximum of a count per operation."""
    return '%-46s n=%-5d median=%9d     max=%9d' % (
        name, len(counts), statistics.median(counts), max(counts))


def write_fleet(path, devices, vfs):
    """A fake-driver inventory file: ``devices`` FPGAs of ``vfs`` VFs each
    (per FPGA a root, a region and a PF deployable)."""
    fleet = {'fpgas': [{
        'count': devices, 'vendor': '0x8086', 'vendor_name': 'intel',
        'board': 'bench_board', 'model': 'bench FPGA on {host}',
        'regions': [{'pfs': 1, 'vfs_per_pf': vfs}]}]}
    with open(path, 'w') as fleet_file:
        yaml.safe_dump(fleet, fleet_file)


def host_inventory(fleet_path, host):
    """The report primitives an agent of ``host`` would send."""
    driver = fake.FakeDriver(inventory_path=fleet_path, host=host)
    return [drivers_base.device_to_primitive(device, DRIVER_NAME)
            for device in driver.discover()]


class StatementCounter:
    """Counts the SQL statements an engine sends (transaction control aside)."""

    def __init__(self, engine):
        self.engine = engine
        self.count = 0

    def __enter__(self):
        sa.event.listen(self.engine, 'before_cursor_execute', self._count)
        return self

    def __exit__(self, *exc_info):
        sa.event.remove(self.engine, 'before_cursor_execute', self._count)

    def _count(self, connection, cursor, statement, parameters, context,
               executemany):
        if statement.split(None, 1)[0].upper() not in TRANSACTION_CONTROL:
            self.count += 1


class CountingApp:
    """A WSGI app counting the requests it passes to ``app``."""

    def __init__(self, app):
        self.app = app
        self.count = 0
        self._lock = threading.Lock()

    def __call__(self, environ, start_response):
        with self._lock:
            self.count += 1
        return self.app(environ, start_response)


@contextlib.contextmanager
def database(url, state_dir):
    """A database URL with cyborg's schema; a server database is made and dropped.

    Without ``url``: an SQLite file in ``state_dir``. With a MySQL or
    PostgreSQL URL, its database must not exist yet: it is created here and
    dropped at the end, so a run never mixes with earlier rows.
    """
    if not url:
        yield 'sqlite:///' + os.path.join(state_dir, 'cyborg.sqlite')
        return
    target = sa.engine.make_url(url)
    if target.get_backend_name() == 'sqlite':
        yield url
        return
    if target.get_backend_name() == 'postgresql':
        admin = target.set(database='postgres')
        create = "CREATE DATABASE %s ENCODING 'UTF8' TEMPLATE template0"
        drop = 'DROP DATABASE IF EXISTS %s WITH (FORCE)'
    else:
        # URL.set(database=None) would keep the database: replace it.
        admin = target._replace(database=None)
        create = 'CREATE DATABASE %s CHARACTER SET utf8mb4'
        drop = 'DROP DATABASE IF EXISTS %s'
    engine = sa.create_engine(admin, isolation_level='AUTOCOMMIT',
                              poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as connection:
            connection.execute(sa.text(create % target.database))
        try:
            yield target.render_as_string(hide_password=False)
        finally:
            db_api.main_context_manager.dispose_pool()
            with engine.connect() as connection:
                connection.execute(sa.text(drop % target.database))
    finally:
        engine.dispose()


class Fleet:
    """The services under test: database, Placement, conductor and API."""

    def __init__(self, state_dir, database_url):
        self.state_dir = state_dir
        self.database_url = database_url
        self.placement_requests = None
        self.api_url = None
        self._servers = []
        self._cleanups = []

    def start(self):
        """Migrate, serve Placement, register the conductor, serve the API."""
        conf.CONF.set_override('connection', self.database_url,
                               group='database')
        db_api.configure(conf.CONF)
        migration.upgrade('head')

        placement_config = aio_placement.make_config(
            aio_placement.database_url(self.state_dir))
        aio_placement.sync_database(placement_config)
        self.placement_requests = CountingApp(
            aio_placement.load_app(placement_config))
        placement_url = self._serve(self.placement_requests, 'placement')
        placement_client.register_token_endpoint_opts(conf.CONF)
        for name, value in (('auth_type', 'admin_token'),
                            ('endpoint', placement_url), ('token', 'admin')):
            conf.CONF.set_override(name, value, group='placement')

        messaging = conffixture.ConfFixture(conf.CONF)
        messaging.setUp()
        self._cleanups.append(messaging.cleanUp)
        messaging.transport_url = 'fake:/'
        rpc.init(conf.CONF)
        self.conductor = conductor_manager.ConductorManager(CONDUCTOR_HOST)
        rpc.register_local_endpoint(conductor_rpcapi.TOPIC, CONDUCTOR_HOST,
                                    self.conductor)
        self.client = conductor_rpcapi.ConductorAPI()

        conf.CONF.set_override('auth_strategy', 'noauth')
        self.api_url = self._serve(api_app.setup_app(conf.CONF), 'bench-api')

    def _serve(self, app, name):
        server = api_server.Server(app, '127.0.0.1', 0, threads=8, name=name)
        server.start()
        self._servers.append(server)
        return 'http://127.0.0.1:%d' % server.port

    def stop(self):
        """Stop the servers and the RPC plumbing."""
        while self._servers:
            self._servers.pop().stop()
        rpc.cleanup()
        while self._cleanups:
            self._cleanups.pop()()
        db_api.main_context_manager.dispose_pool()


def bench_reports(fleet, hosts, fleet_path):
    """Report every host twice (first and unchanged); print the numbers."""
    context = cyborg_context.get_admin_context()
    engine = db_api.get_engine()
    placement = placement_client.PlacementClient(conf.CONF)
    # Nova registers compute nodes; here the benchmark does it, untimed.
    for host in hosts:
        placement.ensure_provider(host)

    discovery, inventories = [], {}
    for host in hosts:
        started = time.perf_counter()
        inventories[host] = host_inventory(fleet_path, host)
        discovery.append(time.perf_counter() - started)

    results = {}
    for kind in ('first', 'unchanged'):
        seconds, statements, placement_requests = [], [], []
        for host in hosts:
            before = fleet.placement_requests.count
            with StatementCounter(engine) as counter:
                started = time.perf_counter()
                fleet.client.report_inventory(context, host, inventories[host])
                seconds.append(time.perf_counter() - started)
            statements.append(counter.count)
            placement_requests.append(fleet.placement_requests.count - before)
        results[kind] = (seconds, statements, placement_requests)

    print(timing_line('fake driver discovery per host', discovery))
    for kind in ('first', 'unchanged'):
        seconds, statements, placement_requests = results[kind]
        print(timing_line('%s report per host' % kind, seconds, total=True))
        print(count_line('  SQL statements per %s report' % kind, statements))
        print(count_line('  Placement requests per %s report' % kind,
                         placement_requests))
