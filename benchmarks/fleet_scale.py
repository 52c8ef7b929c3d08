"""A fleet of N simulated hosts of 8 devices: what reports and pages cost.

For each size of ``--sizes`` (100 and 1,000 hosts; 10,000 where the
machine allows), the fleet grows to that many hosts
(``bench.many_hosts.SimulatedHosts``: one process reporting as N hosts,
each with its own devices and compute-node provider) and the script
measures, through the in-process conductor of ``bench.fleet.Fleet``
(local dispatch, a real Placement served in this process):

* the conductor's cost of a report: first, unchanged, changed (one
  device's model) and unchanged past ``[conductor]
  report_resync_interval`` (a resync): wall and CPU time, SQL statements,
  Placement requests, reports per second;
* the floor of an unchanged report, measured in the same run: one
  primary-key SELECT through the same engine, and the ratio to it;
* how many conductors a fleet reporting every ``--report-interval``
  seconds needs, at the size measured and at 10,000 hosts (projected
  from the CPU a report costs: unchanged ones, one in
  ``report_resync_interval / report_interval`` a resync; and with every
  report applied in full, as before the skip);
* ``GET /v2/devices`` (default page and ``limit=100``) and the fleet
  page's JSON (``GET /v2/fleet``: its first page of hosts, its summary
  and a host search) through cyborg-api;
* the database's size, and per host.
"""

# cyborg first: importing it selects oslo.service's threading backend, which
# oslo_messaging would otherwise set to eventlet.
import cyborg  # noqa: F401

import argparse
import copy
import datetime
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid

import requests
import sqlalchemy as sa
from oslo_config import fixture as config_fixture

from cyborg import conf
from cyborg.db import api as db_api
from cyborg import objects

import bench
from bench import fleet as bench_fleet
from bench import many_hosts

API_HEADERS = {'OpenStack-API-Version': 'accelerator 2.3'}
QUICK = {'sizes': '10,30', 'requests': 3, 'sample': 5}
PROJECTED_HOSTS = 10000
# A conductor kept at half of a core leaves room for bursts and changes.
HEADROOM = 0.5


def write_fleet(path, devices):
    """A fake-driver inventory of ``devices`` GPUs a host."""
    import yaml
    with open(path, 'w') as fleet_file:
        yaml.safe_dump({'gpus': [{'count': devices,
                                  'model': 'bench GPU on {host}'}]},
                       fleet_file)


def changed(devices):
    """The same report with the first device's model changed."""
    devices = copy.deepcopy(devices)
    devices[0]['model'] += ' (changed)'
    return devices


def age_syncs(seconds):
    """Move every host's last sync ``seconds`` into the past."""
    table = sa.table('host_locks', sa.column('report_synced_at'))
    past = datetime.datetime.now(datetime.timezone.utc).replace(
        tzinfo=None) - datetime.timedelta(seconds=seconds)
    with db_api.get_engine().begin() as connection:
        connection.execute(sa.update(table).values(report_synced_at=past))


def floor_seconds(fleet, host, count=200):
    """The floor of an unchanged report: medians of one conductor RPC
    call (``ping``, through the same local dispatch) and of one
    primary-key SELECT of host_locks through the conductor's engine (the
    one statement an unchanged report needs)."""
    from cyborg import context as cyborg_context
    context = cyborg_context.get_admin_context()
    statement = sa.text('SELECT host FROM host_locks WHERE host = :host')
    calls, selects = [], []
    with db_api.get_engine().connect() as connection:
        for _ in range(count):
            started = time.perf_counter()
            fleet.client.ping(context)
            calls.append(time.perf_counter() - started)
            started = time.perf_counter()
            connection.execute(statement, {'host': host}).first()
            selects.append(time.perf_counter() - started)
    return statistics.median(calls), statistics.median(selects)


def database_bytes(url, state_dir):
    """The size of the database, as the server (or the file) says."""
    backend = sa.engine.make_url(url).get_backend_name()
    if backend == 'sqlite':
        with db_api.get_engine().connect() as connection:
            connection.execute(sa.text('PRAGMA wal_checkpoint(TRUNCATE)'))
        return os.path.getsize(os.path.join(state_dir, 'cyborg.sqlite'))
    if backend == 'postgresql':
        query = 'SELECT pg_database_size(current_database())'
    else:
        query = ('SELECT SUM(data_length + index_length) FROM '
                 'information_schema.tables WHERE table_schema = DATABASE()')
    with db_api.get_engine().connect() as connection:
        return int(connection.execute(sa.text(query)).scalar() or 0)


def time_get(session, url, count):
    """Median and p95 seconds of ``count`` GETs of ``url``, and the
    size of the last answer."""
    session.get(url, headers=API_HEADERS, timeout=300)
    seconds, size = [], 0
    for _ in range(count):
        started = time.perf_counter()
        response = session.get(url, headers=API_HEADERS, timeout=300)
        seconds.append(time.perf_counter() - started)
        response.raise_for_status()
        size = len(response.content)
    return statistics.median(seconds), bench.percentile(seconds, 0.95), size


def bench_pages(api_url, count, host):
    """The lists and the fleet page's JSON, through cyborg-api."""
    session = requests.Session()
    for label, path in (
            ('GET /v2/devices (default page)', '/v2/devices'),
            ('GET /v2/devices?limit=100', '/v2/devices?limit=100'),
            ('GET /v2/fleet (JSON, first page)', '/v2/fleet'),
            ('GET /v2/fleet?host=<one host>', '/v2/fleet?host=' + host)):
        median, p95, size = time_get(session, api_url + path, count)
        print('%-44s median=%8.1f ms  p95=%8.1f ms  %9d bytes'
              % (label, median * 1000, p95 * 1000, size))


def conductors_line(name, hosts, interval, cpu):
    """How many conductors ``hosts`` reporting every ``interval`` s need,
    each report costing ``cpu`` seconds of a conductor's one core."""
    rate = hosts / interval
    cores = rate * cpu
    print('%-44s %8.1f reports/s x %6.2f ms CPU = %5.2f cores: %d '
          'conductor(s) at %d%% load' % (
              name, rate, cpu * 1000, cores,
              max(1, math.ceil(cores / HEADROOM)), HEADROOM * 100))


def bench_size(fleet, simulated, size, arguments, database_url):
    """Grow the fleet to ``size`` hosts and print its figures."""
    new = simulated.grow(size)
    sample = simulated.hosts[:min(arguments.sample, size)]
    print('--- %d hosts x %d devices (%d devices)'
          % (size, arguments.devices, size * arguments.devices))
    if arguments.seed_from and size >= arguments.seed_from:
        # Only the sample's hosts need providers: their changed and
        # resync reports sync Placement.
        simulated.register([host for host in new if host in sample])
        started = time.perf_counter()
        simulated.seed(new)
        print('%-44s %d hosts in %.0f s (not timed per report)' % (
            'first reports seeded in the database', len(new),
            time.perf_counter() - started))
    else:
        simulated.register(new)
        print(simulated.report(new).line('first report (%d new hosts)'
                                         % len(new)))
    unchanged = simulated.report(simulated.hosts)
    print(unchanged.line('unchanged report'))
    print(simulated.report(sample, change=changed).line('changed report'))
    simulated.report(sample)  # back as it was: applied, untimed
    age_syncs(conf.CONF.conductor.report_resync_interval + 1)
    resync = simulated.report(sample)
    print(resync.line('unchanged report past the resync interval'))
    call, select = floor_seconds(fleet, simulated.hosts[0])
    print('%-44s median=%8.3f ms  (RPC call %.3f ms + SELECT %.3f ms)  '
          'unchanged report / floor %.1fx' % (
              'floor: one RPC call and one primary-key SELECT',
              (call + select) * 1000, call * 1000, select * 1000,
              statistics.median(unchanged.wall) / (call + select)))
    interval = arguments.report_interval
    # A host's report is a resync once every report_resync_interval.
    share = min(1.0, interval / conf.CONF.conductor.report_resync_interval)
    cpu = statistics.median(unchanged.cpu)
    blended = (1 - share) * cpu + share * statistics.median(resync.cpu)
    conductors_line('conductors, %d hosts unchanged' % size, size, interval,
                    blended)
    conductors_line('conductors, %d hosts (projected)' % PROJECTED_HOSTS,
                    PROJECTED_HOSTS, interval, blended)
    conductors_line('  the same, every report applied in full',
                    PROJECTED_HOSTS, interval, statistics.median(resync.cpu))
    bench_pages(fleet.api_url, arguments.requests, simulated.hosts[-1])
    size_bytes = database_bytes(database_url, fleet.state_dir)
    print('%-44s %9.1f MiB  %6.1f KiB a host  %d hosts: %.0f MiB '
          '(projected)' % ('database size', size_bytes / 2 ** 20,
                           size_bytes / size / 1024, PROJECTED_HOSTS,
                           size_bytes / size * PROJECTED_HOSTS / 2 ** 20))


def parse_arguments(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--sizes', default='100,1000',
                        help='fleet sizes in hosts, in turn (default '
                             '100,1000; 10000: hours of first reports on 2 CPUs)')
    parser.add_argument('--seed-from', type=int, default=0,
                        help='sizes of at least this many hosts are grown '
                             'by writing the new hosts\' first reports to '
                             'the database without Placement (minutes '
                             'instead of hours at 10,000 hosts; what is '
                             'measured there reads no Placement); 0: never')
    parser.add_argument('--devices', type=int, default=8,
                        help='GPUs a host (default 8)')
    parser.add_argument('--sample', type=int, default=50,
                        help='hosts whose changed and resync reports are '
                             'timed (default 50)')
    parser.add_argument('--requests', type=int, default=10,
                        help='timed requests per page (default 10)')
    parser.add_argument('--report-interval', type=int, default=60,
                        help="the agents' [agent] report_interval "
                             '(default 60)')
    parser.add_argument(
        '--database-url',
        help='cyborg database (created and dropped; must not exist). '
             'Default: a new MariaDB database; with --quick an SQLite file')
    arguments = bench.parse_arguments(
        parser, argv, QUICK, 'fleets of %(sizes)s hosts, %(requests)d '
        'requests a page, on SQLite, to check that the script works')
    if not arguments.quick and not arguments.database_url:
        arguments.database_url = (bench.mariadb_server_url()
                                  + 'cyborg_bench_scale_%s'
                                  % uuid.uuid4().hex[:8])
    return arguments


def main(argv=None):
    arguments = parse_arguments(argv)
    fixture = config_fixture.Config(conf.CONF)
    fixture.setUp()
    conf.CONF([], project='cyborg', default_config_files=[])
    objects.register_all()
    state_dir = tempfile.mkdtemp(prefix='cyborg-bench-scale-')
    conf.CONF.set_override('state_path', state_dir)
    fleet_path = os.path.join(state_dir, 'fleet.yaml')
    write_fleet(fleet_path, arguments.devices)
    try:
        with bench_fleet.database(arguments.database_url,
                                  state_dir) as database_url:
            fleet = bench_fleet.Fleet(state_dir, database_url)
            try:
                fleet.start()
                print('fleet scale: sizes %s, %d GPUs a host, database %s, '
                      'report interval %d s, CPUs %d, load average %.1f' % (
                          arguments.sizes, arguments.devices,
                          sa.engine.make_url(database_url).get_backend_name(),
                          arguments.report_interval, os.cpu_count(),
                          os.getloadavg()[0]))
                simulated = many_hosts.SimulatedHosts(
                    fleet, fleet_path, prefix='sim-%s' % uuid.uuid4().hex[:6])
                for size in [int(size) for size in arguments.sizes.split(',')]:
                    bench_size(fleet, simulated, size, arguments,
                               database_url)
            finally:
                fleet.stop()
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)
        fixture.cleanUp()
    return 0


if __name__ == '__main__':
    sys.exit(main())
