"""Each list endpoint of cyborg-api next to its floor, on each database.

For every database asked for (``--database``: sqlite, mariadb, postgresql;
by default each one that answers) the script creates a database, migrates
it to head and loads ``--rows`` devices, each with one deployable holding
three attributes, one controlpath id and one attach handle, and as many
device profiles and ARQs (each ARQ Bound to one handle). Then, for each
database driver installed for that backend (PyMySQL and mysqlclient;
psycopg2 and psycopg 3), cyborg-api's WSGI app is served in this process by
its threaded server and each list is asked for with a page of ``--rows``
rows (``--requests`` times after a warm-up; the median is kept), and once
more with ``limit=1``: the fixed cost of a call. The client is one
kept-alive ``http.client`` connection reading each answer whole; the
server's CPU time is this process's less the client thread's. The
database's statistics are gathered after the load (``ANALYZE``; on
PostgreSQL ``VACUUM ANALYZE``), as a database in service has them.

The floor of a list is what the hardware allows: the same rows read with
one plain SQL statement through the fastest driver installed (the DBAPI
connection itself, no SQLAlchemy), each row turned into a dict with its
self link, and the page encoded with the fastest encoder (orjson when it is
installed). Each call of a page is followed by a call of its floor on
every driver (in the API's process, on a connection of its own): a shared
virtual machine's speed drifts by a tenth and more within a minute, and
the two sides of a ratio measured minutes apart drifted with it.
Placement's fixed cost (``GET /resource_providers?name=X``
answering one provider, as Placement takes no ``limit`` there, against its
own WSGI app in this process, served the same way) is printed for
comparison. Nothing here asserts a time.
"""

# cyborg first: importing it selects oslo.service's threading backend, which
# oslo_messaging would otherwise set to eventlet.
import cyborg  # noqa: F401

import argparse
import datetime
import http.client
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

import requests
import sqlalchemy as sa
from oslo_config import fixture as config_fixture
from oslo_messaging import conffixture

from cyborg.aio import placement as aio_placement
from cyborg.api import app as api_app
from cyborg.api import responses
from cyborg.api import server as api_server
from cyborg import conf
from cyborg.db import api as db_api
from cyborg.db import migration
from cyborg.db import models
from cyborg.db.queries import deployable_filters
from cyborg import objects
from cyborg import rpc
from cyborg import service

import bench
from bench import fleet as bench_fleet

QUICK = {'rows': 50, 'requests': 3}
API_VERSION = '2.4'
ATTRIBUTES_PER_DEPLOYABLE = 3

# The server URLs each backend's databases are made on, per driver, fastest
# driver last-but-measured: every installed one is timed.
SERVERS = {
    'sqlite': [('pysqlite', None, 'sqlite3')],
    'mariadb': [
        ('PyMySQL', 'mysql+pymysql://root@127.0.0.1:3306/', 'pymysql'),
        ('mysqlclient', 'mysql+mysqldb://root@127.0.0.1:3306/', 'MySQLdb'),
    ],
    'postgresql': [
        ('psycopg2', 'postgresql+psycopg2://postgres@127.0.0.1:5432/',
         'psycopg2'),
        ('psycopg', 'postgresql+psycopg://postgres@127.0.0.1:5432/',
         'psycopg'),
    ],
}

# Each list: its path, the key of its rows in the answer, and the one SQL
# statement of its floor (the columns of its table the answer shows: the
# deployables' stored attributes_list text too, which the floor left out
# before this tree).
LISTS = [
    ('devices', '/v2/devices', 'devices',
     'SELECT id, uuid, type, vendor, model, std_board_info, '
     'vendor_board_info, hostname, status, status_reason, created_at, '
     'updated_at FROM devices ORDER BY id LIMIT %d'),
    ('deployables', '/v2/deployables', 'deployables',
     'SELECT id, uuid, parent_id, root_id, name, num_accelerators, '
     'device_id, driver_name, rp_uuid, bitstream_id, attributes_list, '
     'created_at, updated_at FROM deployables ORDER BY id LIMIT %d'),
    ('attributes', '/v2/attributes', 'attributes',
     # Qualified: KEY is a reserved word of MariaDB's.
     'SELECT a.id, a.uuid, a.deployable_id, a.parent_attribute_id, a.key, '
     'a.value, a.created_at, a.updated_at FROM attributes a ORDER BY a.id '
     'LIMIT %d'),
    ('accelerator_requests', '/v2/accelerator_requests', 'arqs',
     'SELECT a.id, a.uuid, a.state, p.name AS device_profile_name, '
     'a.device_profile_group_id, a.hostname, a.device_rp_uuid, '
     'a.instance_uuid, a.project_id, h.attach_type, '
     'h.uuid AS attach_handle_uuid, h.attach_info, a.state_reason, '
     'a.created_at, '
     'a.updated_at FROM extended_accelerator_requests a '
     'JOIN device_profiles p ON p.id = a.device_profile_id '
     'LEFT JOIN attach_handles h ON h.id = a.attach_handle_id '
     'ORDER BY a.id LIMIT %d'),
    ('device_profiles', '/v2/device_profiles', 'device_profiles',
     'SELECT id, uuid, name, description, profile_json, created_at, '
     'updated_at FROM device_profiles ORDER BY id LIMIT %d'),
]


def installed(module):
    """Whether ``module`` can be imported."""
    return importlib.util.find_spec(module) is not None


def reachable(url):
    """Whether the server of ``url`` answers (quickly)."""
    engine = sa.create_engine(url, connect_args={'connect_timeout': 3},
                              poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as connection:
            connection.execute(sa.text('SELECT 1'))
        return True
    except Exception:  # any driver error: not here
        return False
    finally:
        engine.dispose()


def drivers_of(backend):
    """The (name, server URL) of each driver of ``backend`` installed here."""
    return [(name, url) for name, url, module in SERVERS[backend]
            if installed(module)]


def _new_uuid():
    return str(uuid.uuid4())


def device_rows(ids, now):
    """``(model, rows)`` of the GPUs ``ids``: a device, one deployable with
    three attributes, a control path and an attach handle each."""
    new_uuid = _new_uuid
    return [
        (models.Device, [{
            'id': index, 'uuid': new_uuid(), 'type': 'GPU',
            'vendor': '10de', 'model': 'bench GPU',
            'std_board_info': '{"product_id": "1eb8"}',
            'vendor_board_info': '{"memory": "16GB"}',
            'hostname': 'bench-host-%03d' % (index % 100),
            'status': 'enabled', 'created_at': now, 'updated_at': now}
            for index in ids]),
        (models.Deployable, [{
            'id': index, 'uuid': new_uuid(), 'name': 'gpu-%d' % index,
            'num_accelerators': 1, 'device_id': index,
            'driver_name': 'fake_driver', 'rp_uuid': new_uuid(),
            'created_at': now, 'updated_at': now} for index in ids]),
        (models.Attribute, [{
            'id': (index - 1) * ATTRIBUTES_PER_DEPLOYABLE + offset + 1,
            'uuid': new_uuid(), 'deployable_id': index, 'key': key,
            'value': value, 'created_at': now, 'updated_at': now}
            for index in ids
            for offset, (key, value) in enumerate((
                ('rc', 'PGPU'), ('trait0', 'CUSTOM_GPU_NVIDIA'),
                ('trait1', 'CUSTOM_GPU_PRODUCT_ID_1EB8')))]),
        (models.ControlpathID, [{
            'id': index, 'uuid': new_uuid(), 'device_id': index,
            'cpid_type': 'PCI',
            'cpid_info': '{"domain": "0000", "bus": "%02x", "device": "00", '
                         '"function": "0"}' % (index % 256),
            'created_at': now} for index in ids]),
        (models.AttachHandle, [{
            'id': index, 'uuid': new_uuid(), 'deployable_id': index,
            'cpid_id': index, 'attach_type': 'PCI',
            'attach_info': '{"bus": "%02x", "device": "00", "domain": '
                           '"0000", "function": "0"}' % (index % 256),
            'in_use': True, 'created_at': now} for index in ids]),
    ]


def request_rows(ids, now):
    """``(model, rows)`` of the device profiles ``ids`` and of one Bound
    ARQ of each, holding the attach handle of the same id."""
    new_uuid = _new_uuid
    return [
        (models.DeviceProfile, [{
            'id': index, 'uuid': new_uuid(), 'name': 'profile-%04d' % index,
            'description': 'bench profile %d' % index,
            'profile_json': '[{"resources:PGPU": "1", '
                            '"trait:CUSTOM_GPU_NVIDIA": "required"}]',
            'created_at': now, 'updated_at': now} for index in ids]),
        (models.ARQ, [{
            'id': index, 'uuid': new_uuid(), 'state': 'Bound',
            'device_profile_id': index, 'device_profile_group_id': 0,
            'hostname': 'bench-host-%03d' % (index % 100),
            'device_rp_uuid': new_uuid(), 'instance_uuid': new_uuid(),
            'project_id': 'bench-project', 'attach_handle_id': index,
            'deployable_id': index, 'created_at': now, 'updated_at': now}
            for index in ids]),
    ]


def analyze(engine, names):
    """Gather the statistics of the tables ``names`` a database in service
    has (autovacuum, InnoDB's automatic recalculation) but a bulk load
    just made may not yet: without them PostgreSQL plans a page as a scan
    and sort of the table. PostgreSQL's VACUUM also drops the row versions
    the refresh of the attributes lists left behind (a table twice its
    size otherwise), as autovacuum does; it runs outside a transaction."""
    names = ', '.join(names)
    if engine.dialect.name == 'postgresql':
        with engine.connect().execution_options(
                isolation_level='AUTOCOMMIT') as connection:
            connection.execute(sa.text('VACUUM ANALYZE ' + names))
        return
    with engine.begin() as connection:
        if engine.dialect.name == 'mysql':
            connection.execute(sa.text('ANALYZE TABLE ' + names)).all()
        else:
            connection.execute(sa.text('ANALYZE'))


def load(engine, count):
    """``count`` devices, deployables, handles, profiles and ARQs, with
    three attributes per deployable, in a few bulk inserts."""
    now = datetime.datetime(2026, 1, 2, 3, 4, 5, 678901)
    ids = range(1, count + 1)
    tables = device_rows(ids, now) + request_rows(ids, now)
    with engine.begin() as connection:
        for model, values in tables:
            connection.execute(sa.insert(model.__table__), values)
        # The bulk inserts bypass the attribute writers: store each
        # deployable's attributes_list as they would (one statement).
        for statement in deployable_filters.refresh_statements(ids):
            connection.execute(statement)
    if engine.dialect.name == 'postgresql':
        with engine.begin() as connection:
            for model, _ in tables:
                connection.execute(sa.text(
                    "SELECT setval(pg_get_serial_sequence('%s', 'id'), %d)"
                    % (model.__tablename__, count)))
    analyze(engine, [model.__tablename__ for model, _ in tables])


def fastest_encoder():
    """(name, function of an object to bytes) of the fastest encoder here."""
    if installed('orjson'):
        import orjson
        return 'orjson', orjson.dumps
    return 'json', lambda body: json.dumps(body, default=str).encode()


class Floor:
    """The floor of one list on one driver: one statement, dicts with a
    self link, encoded; each call timed on one DBAPI connection."""

    def __init__(self, url, statement, base_url, resource, encode):
        self.engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
        self.connection = self.engine.raw_connection()
        self.statement = statement
        self.prefix = '%s/v2/%s/' % (base_url, resource)
        self.resource = resource
        self.encode = encode

    def call(self):
        """(wall, CPU) seconds of one call."""
        started = time.perf_counter(), time.process_time()
        cursor = self.connection.cursor()
        cursor.execute(self.statement)
        names = [column[0] for column in cursor.description]
        page = []
        for row in cursor.fetchall():
            item = dict(zip(names, row, strict=True))
            item['links'] = [{'href': self.prefix + item['uuid'],
                              'rel': 'self'}]
            page.append(item)
        self.encode({self.resource: page})
        cursor.close()
        self.connection.rollback()
        return (time.perf_counter() - started[0],
                time.process_time() - started[1])

    def close(self):
        self.connection.close()
        self.engine.dispose()


def api_call(client, path):
    """(wall, CPU, body) of one GET ``path``. CPU is the server's: this
    process's CPU time less the client's (this thread's), so that neither
    the client nor other load on the machine counts; the wall time
    includes reading the answer."""
    headers = {'OpenStack-API-Version': 'accelerator ' + API_VERSION}
    started = (time.perf_counter(), time.process_time(), time.thread_time())
    client.request('GET', path, headers=headers)
    response = client.getresponse()
    body = response.read()
    elapsed = (time.perf_counter() - started[0],
               time.process_time() - started[1]
               - (time.thread_time() - started[2]))
    if response.status != 200:
        raise RuntimeError('GET %s: %d %s' % (path, response.status,
                                              body[:200]))
    return elapsed + (body,)


def side_by_side(client, path, key, expected, floors, count):
    """Median (wall, CPU) seconds of GET ``path`` and of each of
    ``floors`` (``{driver: Floor}``), over ``count`` rounds after one:
    each round calls the API, then each floor, so that a machine whose
    speed drifts (a shared virtual machine's does, by a tenth and more
    within a minute) slows both sides of a ratio alike."""
    api, by_driver = [], {driver: [] for driver in floors}
    for attempt in range(count + 1):
        wall, cpu, body = api_call(client, path)
        timed = {driver: floor.call() for driver, floor in floors.items()}
        if attempt == 0:
            rows = len(json.loads(body)[key])
            if rows != expected:
                raise RuntimeError('GET %s: %d rows, expected %d'
                                   % (path, rows, expected))
            continue
        api.append((wall, cpu))
        for driver, timing in timed.items():
            by_driver[driver].append(timing)
    return medians(api), {driver: medians(timings)
                          for driver, timings in by_driver.items()}


def medians(timings):
    """The median of each column of (wall, CPU) pairs."""
    return tuple(statistics.median(column) for column in zip(*timings,
                                                             strict=True))


def measure_api(database_url, encoder, rows, count, floor_urls):
    """``{list: [page seconds, limit=1 seconds, SQL statements of a page,
    {driver: floor seconds}]}`` of cyborg-api over ``database_url``,
    answers encoded by ``encoder``, each page side by side with its floor
    on each of ``floor_urls`` (``{driver: database URL}``).

    Runs in a process of its own (``--api``): the database is configured
    once per process, as the services do.
    """
    conf.CONF.set_override('connection', database_url, group='database')
    db_api.configure(conf.CONF)
    responses.use_encoder(encoder)
    conf.CONF.set_override('auth_strategy', 'noauth')
    server = api_server.Server(api_app.setup_app(conf.CONF), '127.0.0.1', 0,
                               threads=8, name='bench-api')
    # As cyborg-api does once its application is loaded.
    service.settle_heap()
    server.start()
    url = 'http://127.0.0.1:%d' % server.port
    # One kept-alive connection, the answer read whole: the client's own
    # cost kept small (requests reads a body in 10 kB pieces).
    client = http.client.HTTPConnection('127.0.0.1', server.port,
                                        timeout=120)
    session = requests.Session()
    results = {}
    try:
        _, encode = fastest_encoder()
        for name, path, key, statement in LISTS:
            page = '%s?limit=%d' % (path, rows)
            one = '%s?limit=1' % path
            floors = {driver: Floor(floor_url, statement % rows,
                                    'http://127.0.0.1:6666', name, encode)
                      for driver, floor_url in floor_urls.items()}
            try:
                api, floor_medians = side_by_side(client, page, key, rows,
                                                  floors, count)
            finally:
                for floor in floors.values():
                    floor.close()
            results[name] = [
                api, side_by_side(client, one, key, 1, {}, count)[0],
                statements_per_call(session, url + page), floor_medians]
    finally:
        client.close()
        server.stop()
        db_api.main_context_manager.dispose_pool()
    return results


def api_in_child(database_url, encoder, rows, count, floor_urls):
    """``measure_api`` run by a new Python process of this script."""
    output = subprocess.run(
        [sys.executable, os.path.abspath(__file__), '--api', database_url,
         '--floors', json.dumps(floor_urls),
         '--encoders', encoder, '--rows', str(rows),
         '--microversion', API_VERSION,
         '--requests', str(count)],
        check=True, stdout=subprocess.PIPE, text=True).stdout
    return json.loads(output.strip().splitlines()[-1])


def statements_per_call(session, url):
    """SQL statements one GET ``url`` sends (transaction control aside)."""
    with bench_fleet.StatementCounter(db_api.get_engine()) as counter:
        response = session.get(url, headers={
            'OpenStack-API-Version': 'accelerator ' + API_VERSION},
            timeout=120)
        response.raise_for_status()
    return counter.count


def placement_fixed_cost(state_dir, count):
    """Median seconds of Placement's GET /resource_providers?name=X, one
    provider answered (Placement takes no ``limit`` there)."""
    config = aio_placement.make_config(aio_placement.database_url(state_dir))
    aio_placement.sync_database(config)
    server = api_server.Server(aio_placement.load_app(config), '127.0.0.1',
                               0, threads=8, name='bench-placement')
    server.start()
    url = 'http://127.0.0.1:%d' % server.port
    headers = {'OpenStack-API-Version': 'placement latest',
               'X-Auth-Token': 'admin'}
    session = requests.Session()
    try:
        session.post(url + '/resource_providers', headers=headers, json={
            'name': 'bench-provider', 'uuid': str(uuid.uuid4())},
            timeout=30).raise_for_status()
        timings = []
        for attempt in range(count + 1):
            started = time.perf_counter()
            response = session.get(url + '/resource_providers?name=bench-provider',
                                   headers=headers, timeout=30)
            elapsed = time.perf_counter() - started
            response.raise_for_status()
            if attempt:
                timings.append(elapsed)
        return statistics.median(timings)
    finally:
        server.stop()


def measure_database(backend, arguments, state_dir, encoders):
    """Load one database and print its table of lists and floors."""
    drivers = drivers_of(backend)
    if backend == 'sqlite':
        server_database = None
    else:
        server_database = drivers[0][1] + 'cyborg_floor_%s' % (
            uuid.uuid4().hex[:8])
    with bench_fleet.database(server_database, state_dir) as url:
        engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
        try:
            migration.upgrade('head', engine=engine)
            load(engine, arguments.rows)
        finally:
            engine.dispose()
        name = sa.engine.make_url(url).database
        urls = {driver: url if backend == 'sqlite' else server_url + name
                for driver, server_url in drivers}
        encoder_name, _ = fastest_encoder()
        results, statements, floors = {}, {}, {}
        for driver, _ in drivers:
            for encoder in encoders:
                measured = api_in_child(urls[driver], encoder, arguments.rows,
                                        arguments.requests, urls)
                for list_name, (page, one, count, floor) in measured.items():
                    # The best floor of the same run, for this run's ratio.
                    best = min(floor.values(), key=lambda timing: timing[0])
                    results[driver, encoder, list_name] = (page, one, best)
                    statements[list_name] = count
                    for floor_driver, timing in floor.items():
                        floors.setdefault((floor_driver, list_name),
                                          []).append(timing)
    print_table(backend, arguments.rows, drivers, encoders, encoder_name,
                results, {key: medians(timings)
                          for key, timings in floors.items()}, statements)


def print_table(backend, rows, drivers, encoders, encoder_name, results,
                floors, statements):
    """The lines of one database: per driver and encoder, each list."""
    print()
    print('== %s: %d rows a page, medians (API %s); wall time, and CPU time '
          '(the API server\'s, the floor\'s) in brackets =='
          % (backend, rows, API_VERSION))
    print('%-21s %-11s %-6s %15s %15s %8s %8s %15s %4s' % (
        'list', 'driver', 'enc.', 'API µs/row', 'floor µs/row', 'ratio',
        '(CPU)', 'limit=1 ms', 'SQL'))
    for name, _, _, _ in LISTS:
        for driver, _ in drivers:
            for encoder in encoders:
                page, one, best_floor = results[driver, encoder, name]
                print('%-21s %-11s %-6s %6.1f (%6.1f) %6.1f (%6.1f) %7.2fx '
                      '%7.2fx %6.2f (%5.2f) %4d' % (
                          name, driver, encoder, page[0] / rows * 1e6,
                          page[1] / rows * 1e6, best_floor[0] / rows * 1e6,
                          best_floor[1] / rows * 1e6,
                          page[0] / best_floor[0], page[1] / best_floor[1],
                          one[0] * 1000, one[1] * 1000, statements[name]))
    print('floor of each driver (one statement, dicts with a self link, %s),'
          ' ms a page, the median of its runs:' % encoder_name)
    for driver, _ in drivers:
        print('  %-12s %s' % (driver, '  '.join(
            '%s %.2f (%.2f)' % (name, floors[driver, name][0] * 1000,
                                floors[driver, name][1] * 1000)
            for name, _, _, _ in LISTS)))


def parse_arguments(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--database', action='append',
                        choices=sorted(SERVERS),
                        help='a database to measure on (repeat for more); '
                             'default: each one that answers')
    parser.add_argument('--rows', type=int, default=1000,
                        help='rows of each table and of a page '
                             '(default 1000; attributes are three times '
                             'as many)')
    parser.add_argument('--requests', type=int, default=15,
                        help='timed calls per list (default 15)')
    parser.add_argument('--microversion', default=API_VERSION,
                        help='the microversion the lists are asked at '
                             '(default %s; 2.0 is what a client that asks '
                             'for none gets)' % API_VERSION)
    parser.add_argument('--api', metavar='DATABASE_URL',
                        help=argparse.SUPPRESS)
    parser.add_argument('--floors', default='{}', help=argparse.SUPPRESS)
    parser.add_argument('--encoders', default='project',
                        help='comma-separated encoders of the API\'s '
                             'answers to time: json, orjson or project '
                             '(what cyborg picks; default)')
    return bench.parse_arguments(
        parser, argv, QUICK,
        'small tables (%(rows)d rows, %(requests)d calls) to check that '
        'the script works')


def main(argv=None):
    global API_VERSION
    arguments = parse_arguments(argv)
    API_VERSION = arguments.microversion
    encoders = [responses.encoder_name() if name == 'project' else name
                for name in arguments.encoders.split(',')]
    fixture = config_fixture.Config(conf.CONF)
    fixture.setUp()
    conf.CONF([], project='cyborg', default_config_files=[])
    objects.register_all()
    conf.CONF.set_override('max_limit', max(1000, arguments.rows),
                           group='api')
    messaging = conffixture.ConfFixture(conf.CONF)
    messaging.setUp()
    messaging.transport_url = 'fake:/'
    rpc.init(conf.CONF)
    if arguments.api:
        try:
            print(json.dumps(measure_api(
                arguments.api, encoders[0], arguments.rows,
                arguments.requests, json.loads(arguments.floors))))
        finally:
            rpc.cleanup()
            messaging.cleanUp()
            fixture.cleanUp()
        return 0
    state_dir = tempfile.mkdtemp(prefix='cyborg-bench-floor-')
    try:
        backends = arguments.database or [
            backend for backend in ('sqlite', 'mariadb', 'postgresql')
            if backend == 'sqlite' or any(
                reachable(url) for _, url in drivers_of(backend))]
        print('floor benchmark: %d rows a page, %d calls each, CPUs %d, '
              'encoder %s' % (arguments.rows, arguments.requests,
                              os.cpu_count(), responses.encoder_name()))
        print('placement GET /resource_providers?name=X (1 row): %.2f ms' % (
            placement_fixed_cost(state_dir, arguments.requests) * 1000))
        for backend in backends:
            measure_database(backend, arguments, state_dir, encoders)
    finally:
        rpc.cleanup()
        messaging.cleanUp()
        shutil.rmtree(state_dir, ignore_errors=True)
        fixture.cleanUp()
    return 0


if __name__ == '__main__':
    sys.exit(main())
