"""Mixed load for N minutes; sample threads, memory, descriptors, DB connections.

Two deployments, each started by the script: ``aio`` is one ``cyborg-aio``
process (SQLite, embedded Placement, its own agent with the fake driver),
``processes`` is ``cyborg-api``, ``cyborg-conductor`` and one
``cyborg-agent`` as separate processes on MariaDB, with a real Placement
served inside this script. Both use their own RabbitMQ virtual host.

Fifty agent processes would not fit a small machine, so ``--hosts``
simulated hosts are this script sending their inventories (fake driver
fleets) through ``ConductorAPI.report_inventory`` over RabbitMQ, one round
every ``--report-interval`` seconds, one host reporting an extra GPU each
round; the one real agent (the all-in-one's, or ``cyborg-agent``) holds the
FPGA regions that binds use. ``--clients`` threads loop over create
profile, create ARQ, bind (PATCH), wait until resolved, unbind, delete ARQ
and profile; one thread lists devices, deployables, ARQs and profiles.

Once a minute it samples each service process (threads, VmRSS and open
descriptors from /proc, its TCP connections to the database) and the
database's own count of connections to the soak database; minute 1 is the
warm-up sample the bounds compare with. The exit code is 1 when a bound is
exceeded, a request failed (5xx, connection error, unexpected status) or a
bind did not end Bound.
"""

# cyborg first: importing it selects oslo.service's threading backend, which
# oslo_messaging would otherwise set to eventlet.
import cyborg  # noqa: F401

import argparse
import collections
import math
import os
import sys
import threading
import time
import uuid

import requests

from cyborg import conf
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg import context as cyborg_context
from cyborg import objects

from bench import api as bench_api
from bench import deployment as bench_deployment

# oslo.db's defaults, which the services keep: connections a process may hold.
POOL_SIZE, POOL_OVERFLOW = 5, 50
# Memory may grow this much after warm-up (the first third of the run:
# pools, caches and the allocator's arenas fill), and no more.
RSS_GROWTH = 0.05
# Threads of per-batch pools (releases, prepares on several hosts) that live
# while a batch runs and may be caught by a sample.
THREAD_SLACK = 2
# Sockets of requests in flight when a sample is taken.
FD_SLACK = 4
POLL_INTERVAL = 0.1
BIND_TIMEOUT = 60
LIST_PAUSE = 0.5
LISTS = (('/v2/devices', 'devices'), ('/v2/deployables', 'deployables'),
         ('/v2/accelerator_requests', 'arqs'),
         ('/v2/device_profiles', 'device_profiles'))
BOUNDS = (
    'threads: no new high after half-time (last <= max of minutes 1..N/2 '
    '+ %d)' % THREAD_SLACK,
    'open fds: last <= max of minutes 1..N/2 + %d' % FD_SLACK,
    'RSS: last <= minute N/3 (end of warm-up) + %d %%' % (RSS_GROWTH * 100),
    'DB connections: max <= pool size + overflow (%d + %d) per process'
    % (POOL_SIZE, POOL_OVERFLOW),
    'requests: no 5xx, no connection error, no unexpected status; '
    'every bind Bound')


class Counts:
    """Request, error and bind counters shared by the load threads."""

    def __init__(self):
        self._lock = threading.Lock()
        self.values = collections.Counter()
        self.first_errors = []

    def add(self, name, amount=1):
        with self._lock:
            self.values[name] += amount

    def error(self, kind, message):
        with self._lock:
            self.values[kind] += 1
            if len(self.first_errors) < 5:
                self.first_errors.append('%s: %s' % (kind, message[:300]))


class Api(bench_api.Api):
    """HTTP calls that count requests and failures instead of raising."""

    def __init__(self, endpoint, counts):
        super().__init__(endpoint)
        self.counts = counts

    def call(self, method, path, body=None, expected=(200,)):
        self.counts.add('requests')
        try:
            response = super().call(method, path, body,
                                    expected=range(100, 600))
        except requests.RequestException as error:
            self.counts.error('connection errors', '%s %s: %s'
                              % (method, path, error))
            raise
        if response.status_code not in expected:
            kind = ('5xx' if response.status_code >= 500
                    else 'unexpected status')
            message = '%s %s answered %d: %s' % (
                method, path, response.status_code, response.text)
            self.counts.error(kind, message)
            raise RuntimeError(message)
        return response


class Load:
    """The load threads against one deployment."""

    def __init__(self, api, counts, agent_host, regions, hosts, reports,
                 report_interval):
        self.api = api
        self.counts = counts
        self.agent_host = agent_host
        self.regions = regions
        self.hosts = hosts
        self.reports = reports
        self.report_interval = report_interval
        self.prefix = 'soak-%s' % uuid.uuid4().hex[:8]
        self.stop = threading.Event()
        self.round_seconds = []
        self._threads = []

    def start(self):
        targets = [self._report] + [self._lists]
        targets += [lambda rp=rp: self._binds(rp) for rp in self.regions]
        for target in targets:
            thread = threading.Thread(target=target, daemon=True)
            thread.start()
            self._threads.append(thread)

    def finish(self):
        self.stop.set()
        for thread in self._threads:
            thread.join(BIND_TIMEOUT + 30)
        self._clean_up()

    def _report(self):
        client = conductor_rpcapi.ConductorAPI()
        context = cyborg_context.get_admin_context()
        round_number = 0
        while not self.stop.is_set():
            started = time.monotonic()
            changed = self.hosts[round_number % len(self.hosts)]
            for host in self.hosts:
                if self.stop.is_set():
                    return
                try:
                    client.report_inventory(
                        context, host, self.reports[host][host == changed])
                    self.counts.add('reports')
                except Exception as error:
                    self.counts.error('report errors', '%s: %r'
                                      % (host, error))
            self.round_seconds.append(time.monotonic() - started)
            round_number += 1
            self.stop.wait(max(0.0, started + self.report_interval
                               - time.monotonic()))

    def _lists(self):
        while not self.stop.is_set():
            for path, _ in LISTS:
                try:
                    self.api.call('GET', path)
                    self.counts.add('lists')
                except (RuntimeError, requests.RequestException):
                    pass
            self.stop.wait(LIST_PAUSE)

    def _binds(self, rp_uuid):
        while not self.stop.is_set():
            try:
                self.counts.add('binds ' + self._bind_once(rp_uuid))
            except (RuntimeError, requests.RequestException):
                self.counts.add('binds interrupted by a failed request')
                self.stop.wait(1)

    def _bind_once(self, rp_uuid):
        """One instance's life; returns the state its bind resolved to."""
        api = self.api
        profile = '%s-%s' % (self.prefix, uuid.uuid4().hex[:8])
        instance = str(uuid.uuid4())
        api.call('POST', '/v2/device_profiles', [{
            'name': profile, 'groups': [{'resources:FPGA': '1'}]}],
            expected=(201,))
        arq = api.call('POST', '/v2/accelerator_requests',
                       {'device_profile_name': profile},
                       expected=(201,)).json()['arqs'][0]['uuid']
        paths = (('/hostname', self.agent_host), ('/device_rp_uuid', rp_uuid),
                 ('/instance_uuid', instance))
        api.call('PATCH', '/v2/accelerator_requests', {arq: [
            {'path': path, 'op': 'add', 'value': value}
            for path, value in paths]}, expected=(202,))
        deadline = time.monotonic() + BIND_TIMEOUT
        state = 'unresolved after %d s' % BIND_TIMEOUT
        while time.monotonic() < deadline:
            response = api.call(
                'GET', '/v2/accelerator_requests?instance=%s&bind_state='
                'resolved' % instance, expected=(200, 423))
            if response.status_code == 200:
                state = response.json()['arqs'][0]['state']
                break
            time.sleep(POLL_INTERVAL)
        api.call('PATCH', '/v2/accelerator_requests', {arq: [
            {'path': path, 'op': 'remove'} for path, _ in paths]},
            expected=(202,))
        api.call('DELETE', '/v2/accelerator_requests?arqs=%s' % arq,
                 expected=(204,))
        api.call('DELETE', '/v2/device_profiles/%s' % profile,
                 expected=(204,))
        return state

    def _clean_up(self):
        """Delete what a failed loop left behind (not counted)."""
        api = bench_api.Api(self.api.endpoint)
        try:
            for arq in api.every('/v2/accelerator_requests', 'arqs'):
                if arq['device_profile_name'].startswith(self.prefix):
                    api.call('DELETE', '/v2/accelerator_requests?arqs=%s'
                             % arq['uuid'], expected=(204,))
            for profile in api.every('/v2/device_profiles',
                                     'device_profiles'):
                if profile['name'].startswith(self.prefix):
                    api.call('DELETE', '/v2/device_profiles/%s'
                             % profile['name'], expected=(204,))
        except (RuntimeError, requests.RequestException) as error:
            print('cleanup of left-over ARQs and profiles failed: %s' % error)


def figure_rows(samples, services, minutes):
    """(name, values, bound text, passed) per figure; ``samples`` per minute."""
    half = max(1, math.ceil(minutes / 2))
    rows = []
    for service in services:
        series = {key: [sample[service][key] for sample in samples]
                  for key in ('threads', 'fds', 'rss_mib', 'db_connections')}
        early_threads = max(series['threads'][:half])
        early_fds = max(series['fds'][:half])
        rows.append(('%s threads' % service, series['threads'],
                     '<= %d' % (early_threads + THREAD_SLACK),
                     series['threads'][-1] <= early_threads + THREAD_SLACK))
        rows.append(('%s open fds' % service, series['fds'],
                     '<= %d' % (early_fds + FD_SLACK),
                     series['fds'][-1] <= early_fds + FD_SLACK))
        warm = max(1, math.ceil(minutes / 3))
        limit = series['rss_mib'][warm - 1] * (1 + RSS_GROWTH)
        rows.append(('%s RSS MiB' % service, series['rss_mib'],
                     '<= %.1f' % limit, series['rss_mib'][-1] <= limit))
        if series['db_connections'][0] is not None:
            rows.append(('%s DB connections' % service,
                         series['db_connections'],
                         '<= %d' % (POOL_SIZE + POOL_OVERFLOW),
                         max(series['db_connections'])
                         <= POOL_SIZE + POOL_OVERFLOW))
    if samples[0]['db_total'] is not None:
        limit = (POOL_SIZE + POOL_OVERFLOW) * len(services)
        rows.append(('DB connections (processlist)',
                     [sample['db_total'] for sample in samples],
                     '<= %d' % limit,
                     max(sample['db_total'] for sample in samples) <= limit))
    return rows


def print_table(rows):
    print('%-36s %9s %9s %9s %9s  %-9s %s' % (
        'figure', 'minute 1', 'last', 'max', 'growth', 'bound', 'verdict'))
    for name, values, bound, passed in rows:
        cells = [values[0], values[-1], max(values), values[-1] - values[0]]
        print('%-36s %9s %9s %9s %9s  %-9s %s' % ((name,) + tuple(
            ('%.1f' % cell) if isinstance(cell, float) else str(cell)
            for cell in cells) + (bound, 'PASS' if passed else 'FAIL')))


def sample_minutes(deployment, load, counts, minutes):
    """Sample the services at the end of each of ``minutes`` minutes of
    load, printing a line each; the samples (fewer when a service died)."""
    samples = []
    load_started = time.monotonic()
    for minute in range(1, minutes + 1):
        load.stop.wait(max(0.0, load_started + minute * 60
                           - time.monotonic()))
        dead = deployment.dead_services()
        if dead:
            counts.error('services exited', ', '.join(dead))
            break
        sample = {name: bench_deployment.sample_process(
            service.process.pid, deployment.db_port)
            for name, service in deployment.services.items()}
        sample['db_total'] = deployment.db_total()
        samples.append(sample)
        print('minute %2d: %s; db total %s; requests %d, reports %d, binds '
              'Bound %d, failures %d' % (minute, '; '.join(
                  '%s threads %d rss %.1f MiB fds %d db %s' % (
                      name, values['threads'], values['rss_mib'],
                      values['fds'], na(values['db_connections']))
                  for name, values in sample.items()
                  if name != 'db_total'), na(sample['db_total']),
                  counts.values['requests'], counts.values['reports'],
                  counts.values['binds Bound'], failures(counts)),
              flush=True)
    return samples


def print_counts(counts, load, hosts):
    """The counts, the report rounds of ``hosts`` hosts, the first errors."""
    for name in sorted(counts.values):
        print('%-36s %d' % (name, counts.values[name]))
    if load.round_seconds:
        print('%-36s median %.1f s, max %.1f s (%d rounds)' % (
            'report round of %d hosts' % hosts,
            sorted(load.round_seconds)[len(load.round_seconds) // 2],
            max(load.round_seconds), len(load.round_seconds)))
    for error in counts.first_errors:
        print('  first errors: %s' % error)


def soak(target, arguments):
    """Start ``target``, load it, sample it, print its figures; 0 if it passed."""
    deployment = bench_deployment.Deployment(target, arguments)
    counts = Counts()
    load = None
    print('== %s: %d simulated hosts reporting every %d s through '
          'ConductorAPI.report_inventory from this script, 1 real agent, '
          '%d bind clients, 1 list client, %d minutes, %d CPUs' % (
              target, arguments.hosts, arguments.report_interval,
              arguments.clients, arguments.minutes, os.cpu_count()))
    try:
        started = time.monotonic()
        deployment.start()
        api = Api('http://127.0.0.1:%d' % deployment.api_port, counts)
        # Not counted: connection errors until the API listens.
        regions = deployment.wait_for_regions(bench_api.Api(api.endpoint))
        hosts = ['soak-%s-sim-%03d' % (deployment.run, index)
                 for index in range(arguments.hosts)]
        deployment.connect_rpc(hosts)
        reports = {host: bench_deployment.simulated_inventories(
            deployment.directory, host) for host in hosts}
        print('services %s ready in %.1f s; database %s' % (
            ', '.join(deployment.services), time.monotonic() - started,
            'MariaDB %s' % deployment.db_name if deployment.db_name
            else 'SQLite (connection counts n/a)'))
        load = Load(api, counts, deployment.agent_host, regions, hosts,
                    reports, arguments.report_interval)
        load.start()
        samples = sample_minutes(deployment, load, counts, arguments.minutes)
        load.finish()
        rows = figure_rows(samples, list(deployment.services),
                           len(samples)) if samples else []
        print_table(rows)
        print_counts(counts, load, len(hosts))
        passed = rows and all(row[3] for row in rows) and not failures(
            counts) and len(samples) == arguments.minutes
        print('%s: %s' % (target, 'PASS' if passed else 'FAIL'))
        return 0 if passed else 1
    finally:
        if load is not None and not load.stop.is_set():
            load.finish()
        deployment.stop()


def na(value):
    return 'n/a' if value is None else value


def failures(counts):
    """Failed requests and binds that did not end Bound."""
    return sum(value for name, value in counts.values.items()
               if name in ('5xx', 'connection errors', 'unexpected status',
                           'report errors', 'services exited')
               or (name.startswith('binds ') and name != 'binds Bound'))


def parse_arguments(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--minutes', type=int, default=30,
                        help='minutes of load per target (default 30)')
    parser.add_argument('--target', choices=('aio', 'processes', 'both'),
                        default='both')
    parser.add_argument('--hosts', type=int, default=50,
                        help='simulated hosts reporting (default 50)')
    parser.add_argument('--clients', type=int, default=3,
                        help='bind loop threads, one FPGA region each '
                             '(default 3)')
    parser.add_argument('--report-interval', type=int, default=30,
                        help='seconds between two report rounds of the '
                             'simulated hosts (default 30)')
    parser.add_argument('--keep-logs', action='store_true',
                        help='keep the services\' logs and state')
    return parser.parse_args(argv)


def main(argv=None):
    arguments = parse_arguments(argv)
    conf.CONF([], project='cyborg', default_config_files=[])
    objects.register_all()
    print('bounds, from minute 1 (after a minute of warm-up) to the last '
          'sample:\n  ' + '\n  '.join(BOUNDS))
    targets = (('aio', 'processes') if arguments.target == 'both'
               else (arguments.target,))
    results = [soak(target, arguments) for target in targets]
    return 1 if any(results) else 0


if __name__ == '__main__':
    sys.exit(main())
