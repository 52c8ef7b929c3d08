"""Fleet-scale inventory reports (``inventory.py --fleet-reports``).

Three measurements on one database (MariaDB by default) and one Placement
served in this process, whose requests are counted:

1. one host with ``--big-host`` GPUs (1,000) reporting for the first time,
   then unchanged, through the in-process conductor of ``bench.fleet.Fleet``
   (local dispatch): time, SQL statements and Placement requests of each;
2. ``--hosts`` hosts (100) of ``--devices`` FPGAs with ``--vfs`` VFs (8 x
   5: 64 deployables a host) reporting for the first time and then
   unchanged, the same way, one host at a time (``bench.fleet.bench_reports``);
3. the unchanged reports of those hosts all sent at once, ``--senders``
   (16) at a time over RabbitMQ, as agents whose report intervals fall in
   the same minute send them, to one and then two cyborg-conductor
   processes: reports per second, the latency of a report, and Placement
   requests per report.
"""

# cyborg first: importing it selects oslo.service's threading backend, which
# oslo_messaging would otherwise set to eventlet.
import cyborg  # noqa: F401

import collections
import concurrent.futures
import os
import statistics
import tempfile
import time

import yaml

from cyborg import conf
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg import context as cyborg_context
from cyborg.db import api as db_api
from cyborg.tests.fixtures import messaging
from cyborg.tests.fixtures import processes

import bench
from bench import fleet as bench_fleet
from bench import messaging as bench_messaging

START_TIMEOUT = 120
REPORT_TIMEOUT = 120
WARM_UP_ROUNDS = 3


def big_host_fleet(path, gpus):
    """A fake-driver inventory of ``gpus`` GPUs (one deployable each)."""
    with open(path, 'w') as fleet_file:
        yaml.safe_dump({'gpus': [{'count': gpus,
                                  'model': 'bench GPU on {host}'}]},
                       fleet_file)


def report_once(fleet, host, devices):
    """One report through the in-process conductor: (seconds, SQL
    statements, Placement requests)."""
    context = cyborg_context.get_admin_context()
    before = fleet.placement_requests.count
    with bench_fleet.StatementCounter(db_api.get_engine()) as counter:
        started = time.perf_counter()
        fleet.client.report_inventory(context, host, devices,
                                      timeout=REPORT_TIMEOUT)
        seconds = time.perf_counter() - started
    return seconds, counter.count, fleet.placement_requests.count - before


def bench_big_host(fleet, state_dir, run, gpus):
    """The first and an unchanged report of one host of ``gpus`` GPUs."""
    from cyborg.clients import placement as placement_client

    host = 'bench-%s-big' % run
    path = os.path.join(state_dir, 'big-host.yaml')
    big_host_fleet(path, gpus)
    placement_client.PlacementClient(conf.CONF).ensure_provider(host)
    devices = bench_fleet.host_inventory(path, host)
    for kind in ('first', 'unchanged'):
        seconds, statements, requests = report_once(fleet, host, devices)
        print('%-46s %9.1f ms  SQL statements %d  Placement requests %d' % (
            '%s report, 1 host of %d GPUs' % (kind, gpus), seconds * 1000,
            statements, requests))


class Conductors:
    """cyborg-conductor processes on the fleet's database and Placement,
    over a RabbitMQ virtual host of their own."""

    def __init__(self, fleet):
        self.fleet = fleet
        self.rabbit = messaging.RabbitIsolation()
        self.services = []
        self._messaging = None

    def connect(self):
        """Send this process's RPC over RabbitMQ instead of local dispatch."""
        self.rabbit.setUp()
        self._messaging = bench_messaging.RabbitRPC(self.rabbit)
        self._messaging.start()
        self.client = conductor_rpcapi.ConductorAPI()

    def add(self, name):
        """Start one more conductor; return once it answers."""
        service = processes.ServiceProcess('cyborg-conductor', {
            'DEFAULT': {'transport_url': self.rabbit.transport_url,
                        'control_exchange': self.rabbit.control_exchange,
                        'host': name},
            'database': {'connection': self.fleet.database_url},
            'placement': {'auth_type': 'admin_token', 'token': 'admin',
                          'endpoint': conf.CONF.placement.endpoint}})
        service.setUp()
        self.services.append(service)
        context = cyborg_context.get_admin_context()
        answered = set()

        def all_answer():
            try:
                answered.add(self.client.ping(context))
            except Exception:
                return False
            return len(answered) == len(self.services)

        processes.wait_until(all_answer, 'an answer of every conductor',
                             self.services, timeout=START_TIMEOUT,
                             interval=0.1)

    def stop(self):
        while self.services:
            self.services.pop().cleanUp()
        if self._messaging is not None:
            self._messaging.stop()
        self.rabbit.cleanUp()


def burst(client, inventories, senders):
    """Send every host's report at once, ``senders`` at a time:
    (wall seconds, per-report seconds)."""
    context = cyborg_context.get_admin_context()

    def send(item):
        host, devices = item
        started = time.perf_counter()
        client.report_inventory(context, host, devices,
                                timeout=REPORT_TIMEOUT)
        return time.perf_counter() - started

    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(senders) as pool:
        seconds = list(pool.map(send, sorted(inventories.items())))
    return time.perf_counter() - started, seconds


def bench_conductors(fleet, inventories, senders, counts):
    """Unchanged reports of every host at once, to 1 and then 2
    conductor processes."""
    conductors = Conductors(fleet)
    try:
        conductors.connect()
        for count in counts:
            while len(conductors.services) < count:
                conductors.add('bench-conductor-%d'
                               % (len(conductors.services) + 1))
            # Untimed rounds: a conductor's first report of a host checks
            # each of its providers in Placement once (then cached), and
            # any conductor may get any host's report.
            for _ in range(WARM_UP_ROUNDS):
                burst(conductors.client, inventories, senders)
            before = fleet.placement_requests.count
            wall, seconds = burst(conductors.client, inventories, senders)
            requests = fleet.placement_requests.count - before
            print('%-46s %6.1f reports/s  median=%7.1f ms  p95=%7.1f ms  '
                  'Placement requests per report %.1f' % (
                      '%d unchanged reports, %d conductor%s' % (
                          len(inventories), count,
                          '' if count == 1 else 's'),
                      len(inventories) / wall,
                      statistics.median(seconds) * 1000,
                      bench.percentile(seconds, 0.95) * 1000,
                      requests / len(inventories)))
    finally:
        conductors.stop()


def run(fleet, arguments, hosts, fleet_path, run_id):
    """The three measurements (module docstring)."""
    state_dir = tempfile.mkdtemp(prefix='cyborg-bench-fleet-',
                                 dir=fleet.state_dir)
    deployables = arguments.devices * (3 + arguments.vfs)
    print('fleet reports: 1 host of %d GPUs; %d hosts x %d FPGAs x %d VFs '
          '(%d deployables a host); %d senders; CPUs %d, load average %.1f'
          % (arguments.big_host, len(hosts), arguments.devices,
             arguments.vfs, deployables, arguments.senders, os.cpu_count(),
             os.getloadavg()[0]))
    if arguments.big_host:
        bench_big_host(fleet, state_dir, run_id, arguments.big_host)
    bench_fleet.bench_reports(fleet, hosts, fleet_path)
    inventories = collections.OrderedDict(
        (host, bench_fleet.host_inventory(fleet_path, host)) for host in hosts)
    counts = [int(count) for count in arguments.conductors.split(',')]
    if fleet.database_url.startswith('sqlite'):
        print('conductor processes: skipped on SQLite (give --database-url)')
        return
    bench_conductors(fleet, inventories, arguments.senders, counts)

