"""Load a simulated fleet through the conductor and time reports and lists.

Every host's inventory comes from the fake driver (one fleet file, ``--devices``
FPGAs per host, each a root deployable for the card with one region of
``--vfs`` virtual functions below it, the region's PF below that and the
VFs below the PF: three deployables per FPGA and one per VF, one resource
provider) and is reported through
``ConductorAPI.report_inventory`` to a real ``ConductorManager``, which
writes the database (migrated to head) and syncs a real Placement served on
a local port. Then cyborg-api's WSGI app is served on a free port and
``GET /v2/devices`` and ``/v2/deployables`` are timed over HTTP.

The RPC goes through cyborg's local dispatch (``rpc.register_local_endpoint``,
the all-in-one's path): the same JSON serialization and exception handling
as the wire, without the ``fake://`` transport's 50 ms poll per call, which
would hide the conductor's own time. Reports are sent one host at a time.
"""

# cyborg first: importing it selects oslo.service's threading backend, which
# oslo_messaging would otherwise set to eventlet.
import cyborg  # noqa: F401

import argparse
import os
import shutil
import sys
import tempfile
import time
import urllib.parse
import uuid

import requests
import sqlalchemy as sa
from oslo_config import fixture as config_fixture

from cyborg import conf
from cyborg import objects

import bench
from bench import fleet as bench_fleet

API_HEADERS = {'OpenStack-API-Version': 'accelerator 2.3'}
QUICK = {'hosts': 5, 'devices': 2, 'vfs': 2, 'requests': 5}
# --fleet-reports: 64 deployables a host (8 x (root, region, PF, 5 VFs)).
FLEET_REPORTS = {'hosts': 100, 'devices': 8, 'vfs': 5,
                 'database_url': bench.mariadb_server_url()
                 + 'cyborg_bench_fleet_%s' % uuid.uuid4().hex[:8]}


def _get(session, url):
    started = time.perf_counter()
    response = session.get(url, headers=API_HEADERS, timeout=60)
    elapsed = time.perf_counter() - started
    response.raise_for_status()
    return elapsed, response.json()


def _full_listing(session, url, key):
    """Follow ``next`` links from ``url``; return (seconds, rows, pages)."""
    started = time.perf_counter()
    rows = pages = 0
    while url:
        response = session.get(url, headers=API_HEADERS, timeout=60)
        response.raise_for_status()
        body = response.json()
        rows += len(body[key])
        pages += 1
        url = body.get('next')
    return time.perf_counter() - started, rows, pages


def bench_api(api_url, count, page_size):
    """Time the list endpoints over HTTP, one keep-alive client; print them."""
    session = requests.Session()
    timing_line = bench_fleet.timing_line
    for resource in ('devices', 'deployables'):
        url = '%s/v2/%s' % (api_url, resource)
        _get(session, url)  # warm up: imports, caches, connection
        timings, rows = [], 0
        for _ in range(count):
            elapsed, body = _get(session, url)
            timings.append(elapsed)
            rows = len(body[resource])
        paged = '%s?%s' % (url, urllib.parse.urlencode({'limit': page_size}))
        page_timings = [_get(session, paged)[0] for _ in range(count)]
        full = [_full_listing(session, paged, resource) for _ in range(count)]
        print(timing_line('GET /v2/%s (default page, %d rows)'
                          % (resource, rows), timings))
        print(timing_line('GET /v2/%s?limit=%d' % (resource, page_size),
                          page_timings))
        print(timing_line('all /v2/%s, %d pages, %d rows' % (
            resource, full[0][2], full[0][1]), [one[0] for one in full]))


def parse_arguments(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--hosts', type=int, default=100)
    parser.add_argument('--devices', type=int, default=8,
                        help='FPGAs per host (default 8)')
    parser.add_argument('--vfs', type=int, default=8,
                        help='virtual functions per FPGA (default 8)')
    parser.add_argument('--requests', type=int, default=50,
                        help='timed requests per listing (default 50)')
    parser.add_argument('--page-size', type=int, default=100,
                        help='limit of the paged listings (default 100)')
    parser.add_argument(
        '--database-url',
        help='cyborg database, e.g. mysql+pymysql://root@127.0.0.1/'
             'cyborg_bench or postgresql+psycopg://postgres@127.0.0.1/'
             'cyborg_bench (created and dropped; must not exist). Default: '
             'an SQLite file in a temporary directory')
    parser.add_argument(
        '--fleet-reports', action='store_true',
        help='instead of the listings: a first and an unchanged report of '
             'one host of --big-host GPUs, then the hosts\' unchanged '
             'reports all at once to 1 and 2 conductor processes '
             '(bench/fleet_reports.py). Defaults then: 100 hosts x 8 FPGAs x 5 '
             'VFs (64 deployables a host), a MariaDB database')
    parser.add_argument('--big-host', type=int, default=1000,
                        help='GPUs of the big host of --fleet-reports '
                             '(default 1000; 0: skip it)')
    parser.add_argument('--senders', type=int, default=16,
                        help='reports in flight at once in --fleet-reports '
                             '(default 16)')
    parser.add_argument('--conductors', default='1,2',
                        help='conductor processes of --fleet-reports, in '
                             'turn (default 1,2)')
    arguments = bench.parse_arguments(
        parser, argv, QUICK,
        'a small fleet (%(hosts)d hosts x %(devices)d '
        'devices x %(vfs)d VFs, %(requests)d requests) '
        'to check that the script works')
    if arguments.fleet_reports:
        given = argv if argv is not None else sys.argv[1:]
        for name, value in FLEET_REPORTS.items():
            if '--' + name.replace('_', '-') not in given:
                setattr(arguments, name, value)
        if arguments.quick:
            arguments.big_host = min(arguments.big_host, 20)
            arguments.hosts = QUICK['hosts']
            arguments.vfs = QUICK['vfs']
            arguments.devices = QUICK['devices']
    return arguments


def main(argv=None):
    arguments = parse_arguments(argv)
    fixture = config_fixture.Config(conf.CONF)
    fixture.setUp()
    conf.CONF([], project='cyborg', default_config_files=[])
    objects.register_all()
    state_dir = tempfile.mkdtemp(prefix='cyborg-bench-inventory-')
    run = uuid.uuid4().hex[:8]
    hosts = ['bench-%s-%04d' % (run, index) for index in range(arguments.hosts)]
    fleet_path = os.path.join(state_dir, 'fleet.yaml')
    bench_fleet.write_fleet(fleet_path, arguments.devices, arguments.vfs)
    try:
        with bench_fleet.database(arguments.database_url,
                                  state_dir) as database_url:
            fleet = bench_fleet.Fleet(state_dir, database_url)
            try:
                fleet.start()
                backend = sa.engine.make_url(database_url).get_backend_name()
                print('fleet: %d hosts x %d FPGAs x %d VFs, database %s, '
                      'CPUs %d' % (arguments.hosts, arguments.devices,
                                   arguments.vfs, backend, os.cpu_count()))
                if arguments.fleet_reports:
                    from bench import fleet_reports
                    fleet_reports.run(fleet, arguments, hosts, fleet_path,
                                      run)
                    return 0
                bench_fleet.bench_reports(fleet, hosts, fleet_path)
                bench_api(fleet.api_url, arguments.requests,
                          arguments.page_size)
            finally:
                fleet.stop()
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)
        fixture.cleanUp()
    return 0


if __name__ == '__main__':
    sys.exit(main())
