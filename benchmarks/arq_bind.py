"""Create and bind ARQs for many instances at once; time request to resolved.

Each simulated instance does what Nova does for a server with a device
profile: ``POST /v2/accelerator_requests`` (K ARQs from the profile), one
``PATCH /v2/accelerator_requests`` binding all K to one host and FPGA
region provider, then ``GET ?instance=X&bind_state=resolved`` until it
answers 200 instead of 423. ``--concurrency`` instances are in flight at
once. The bind latency of an instance runs from sending its PATCH to the
200; the create-and-bind latency from sending its POST. One instance is
created, bound and deleted first, untimed, to warm the deployment up. The
ARQs are deleted afterwards with ``DELETE ?instance=X`` (Nova's call),
timed apart.

Without ``--endpoint`` the script starts a ``cyborg-aio`` of its own on
free ports, with a temporary state directory and a fake-driver fleet with
room for every ARQ, and stops it at the end. With ``--endpoint`` it uses a
running deployment without Keystone (``auth_strategy = noauth``: binds
need a service token, which noauth gives every request) and binds to the
FPGA regions its devices report, as far as their handles are free.
``--deployment`` starts a deployment of ``bench.deployment`` instead (the
all-in-one, or the services as processes over RabbitMQ on MariaDB), and
``--events`` has each instance wait for its Nova event, as Nova does,
rather than poll. ``--latency`` measures one bind at a time next to the
agent call it needs (``bench.bind_latency``).
"""

import argparse
import collections
import concurrent.futures
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

import requests
import yaml

import bench
from bench import api as bench_api
from bench import bind_latency

QUICK = {'instances': 6, 'arqs_per_instance': 2, 'concurrency': 3}
# Instances bound to one FPGA region of the fleet the script starts.
INSTANCES_PER_REGION = 4
START_TIMEOUT = 180
# Between two GET ?bind_state=resolved of one instance.
POLL_INTERVAL = 0.05
# States a bind ends in; BindFailed and Deleting count as failures.
RESOLVED = ('Bound', 'BindFailed', 'Deleting')


def timing_line(name, seconds):
    """One line: count, median, p95 and max in milliseconds."""
    return '%-40s n=%-5d median=%9.2f ms  p95=%9.2f ms  max=%9.2f ms' % (
        name, len(seconds), statistics.median(seconds) * 1000,
        bench.percentile(seconds, 0.95) * 1000, max(seconds) * 1000)


class AllInOne:
    """A ``cyborg-aio`` process with a fleet of ``regions`` FPGA regions."""

    def __init__(self, regions, handles_per_region):
        self.regions = regions
        self.handles_per_region = handles_per_region
        self.directory = tempfile.mkdtemp(prefix='cyborg-bench-arq-')
        self.host = 'bench-arq-%s' % uuid.uuid4().hex[:8]
        self.port = bench_api.free_port()
        self.endpoint = 'http://127.0.0.1:%d' % self.port
        self.log_path = os.path.join(self.directory, 'cyborg-aio.log')
        self.process = None

    def start(self):
        fleet_path = os.path.join(self.directory, 'fleet.yaml')
        with open(fleet_path, 'w') as fleet_file:
            yaml.safe_dump({'fpgas': [{
                'count': self.regions, 'vendor': '0x8086',
                'vendor_name': 'intel', 'model': 'bench FPGA',
                'regions': [{'pfs': 1,
                             'vfs_per_pf': self.handles_per_region}]}]},
                fleet_file)
        config_path = os.path.join(self.directory, 'cyborg-aio.conf')
        with open(config_path, 'w') as config_file:
            config_file.write(
                '[DEFAULT]\nhost = %s\n[api]\nport = %d\n'
                'fleet_page_port = %d\n'
                '[aio]\nstate_dir = %s\nplacement_port = %d\nembedded_glance = false\n'
                '[agent]\nfake_inventory = %s\n' % (
                    self.host, self.port, bench_api.free_port(),
                    os.path.join(self.directory, 'state'),
                    bench_api.free_port(),
                    fleet_path))
        script = os.path.join(os.path.dirname(sys.executable), 'cyborg-aio')
        with open(self.log_path, 'wb') as log_file:
            self.process = subprocess.Popen(
                [script, '--config-file', config_path],
                stdin=subprocess.DEVNULL, stdout=log_file,
                stderr=subprocess.STDOUT, start_new_session=True)

    def wait_for_fleet(self, api):
        """Return once every region has its resource provider."""
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError('cyborg-aio exited with %s:\n%s' % (
                    self.process.returncode, self.log_tail()))
            try:
                if len(bench_api.fpga_regions(api)) == self.regions:
                    return
            except (requests.ConnectionError, RuntimeError, ValueError):
                pass
            time.sleep(0.5)
        raise RuntimeError('the fleet did not appear within %d s:\n%s'
                           % (START_TIMEOUT, self.log_tail()))

    def log_tail(self, lines=30):
        with open(self.log_path, errors='replace') as log_file:
            return ''.join(log_file.readlines()[-lines:])

    def stop(self, keep_log=False):
        """Stop the process; remove its directory, or only its state."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        if keep_log:
            shutil.rmtree(os.path.join(self.directory, 'state'),
                          ignore_errors=True)
            print('cyborg-aio log kept: %s' % self.log_path)
        else:
            shutil.rmtree(self.directory, ignore_errors=True)


def plan(api, instances, arqs_per_instance):
    """(hostname, rp_uuid) for each instance, on regions with free handles.

    Handles held by ARQs already bound (or binding) are not free.
    """
    used = collections.Counter(
        arq['device_rp_uuid']
        for arq in api.every('/v2/accelerator_requests', 'arqs')
        if arq['device_rp_uuid'])
    slots = []
    regions = bench_api.fpga_regions(api)
    for rp_uuid, (hostname, handles) in sorted(regions.items()):
        fits = (handles - used[rp_uuid]) // arqs_per_instance
        slots += [(index, rp_uuid, hostname) for index in range(fits)]
    if len(slots) < instances:
        raise RuntimeError(
            'room for %d instances of %d ARQs on the deployment\'s FPGA '
            'regions, not %d' % (len(slots), arqs_per_instance, instances))
    # Spread the instances over the regions rather than filling each first.
    slots.sort()
    return [(hostname, rp_uuid) for _, rp_uuid, hostname in slots[:instances]]


def bind_instance(api, profile_name, instance, hostname, rp_uuid, timeout,
                  nova=None):
    """Create and bind the ARQs of ``instance``; return its timings.

    With ``nova`` (a ``bind_latency.NovaEvents``) the instance waits for
    its event, as Nova does, and then reads its ARQs once, instead of
    polling. A request answered with an unexpected status is the result's
    ``error``.
    """
    result = {'instance': instance, 'created': None, 'bind': None,
              'total': None, 'states': [], 'arqs': 0, 'error': None}
    try:
        started = time.perf_counter()
        arqs = api.call('POST', '/v2/accelerator_requests',
                        {'device_profile_name': profile_name},
                        expected=(201,)).json()['arqs']
        created = time.perf_counter()
        result.update(created=created - started, arqs=len(arqs))
        ops = [{'path': '/hostname', 'op': 'add', 'value': hostname},
               {'path': '/device_rp_uuid', 'op': 'add', 'value': rp_uuid},
               {'path': '/instance_uuid', 'op': 'add', 'value': instance}]
        api.call('PATCH', '/v2/accelerator_requests',
                 {arq['uuid']: ops for arq in arqs}, expected=(202,))
        path = ('/v2/accelerator_requests?instance=%s&bind_state=resolved'
                % instance)
        deadline = created + timeout
        if nova is not None:
            try:
                nova.wait_for(instance, timeout)
            except RuntimeError:
                pass  # the GET below says where the bind is
        while True:
            response = api.call('GET', path, expected=(200, 423))
            if response.status_code == 200:
                resolved = time.perf_counter()
                result.update(
                    bind=resolved - created, total=resolved - started,
                    states=[arq['state']
                            for arq in response.json()['arqs']])
                return result
            if time.perf_counter() > deadline:
                result['states'] = [arq['state'] for arq in api.every(
                    '/v2/accelerator_requests?instance=%s' % instance,
                    'arqs')]
                return result
            time.sleep(POLL_INTERVAL)
    except (RuntimeError, requests.RequestException) as error:
        result['error'] = str(error)
        return result


def report(results, arguments, wall, regions):
    """Print the numbers of the measured phase; return the ARQ states."""
    states = collections.Counter(
        state for result in results for state in result['states'])
    resolved = [result for result in results if result['bind'] is not None]
    errors = [result['error'] for result in results if result['error']]
    arq_count = sum(result['arqs'] for result in results)
    print('instances: %d x %d ARQs, concurrency %d, %d FPGA regions used'
          % (len(results), arguments.arqs_per_instance,
             arguments.concurrency, regions))
    created = [result['created'] for result in results
               if result['created'] is not None]
    if created:
        print(timing_line('POST /v2/accelerator_requests', created))
    if resolved:
        print(timing_line('bind latency (PATCH to resolved)',
                          [result['bind'] for result in resolved]))
        print(timing_line('create and bind (POST to resolved)',
                          [result['total'] for result in resolved]))
    resolved_arqs = sum(result['arqs'] for result in resolved)
    print('%-40s %.2f instances/s  %.2f ARQs/s  (%d ARQs in %.2f s)' % (
        'throughput', len(resolved) / wall, resolved_arqs / wall,
        resolved_arqs, wall))
    print('%-40s Bound=%d BindFailed=%d other=%d unresolved=%d' % (
        'ARQ states', states['Bound'], states['BindFailed'],
        sum(states.values()) - states['Bound'] - states['BindFailed'],
        len(results) - len(resolved) - len(errors)))
    print('%-40s %d%s' % ('instances with a failed request', len(errors),
                          (', first: ' + errors[0]) if errors else ''))
    return states, arq_count, errors


def warm_up(api, profile_name, instance, target, arguments, nova):
    """Bind ``instance`` untimed and delete its ARQs; print the outcome.

    The first requests of a fresh deployment pay for lazy imports, the
    first RPC and the first agent call.
    """
    hostname, rp_uuid = target
    result = bind_instance(api, profile_name, instance, hostname, rp_uuid,
                           arguments.timeout, nova)
    api.call('DELETE', '/v2/accelerator_requests?instance=%s' % instance,
             expected=(204,))
    print('%-40s %s' % ('warm-up instance (not counted)', result[
        'error'] or '%.2f ms, %s' % ((result['total'] or 0) * 1000,
                                     ' '.join(result['states']))))


def clean_up(api, profile_name, instances):
    """Delete the instances' ARQs (timed, one at a time), those of the
    profile left over, and the profile: (delete durations, ARQs left)."""
    deletes = []
    for instance in instances:
        started = time.perf_counter()
        api.call('DELETE', '/v2/accelerator_requests?instance=%s'
                 % instance, expected=(204,))
        deletes.append(time.perf_counter() - started)
    left = [arq for arq in api.every('/v2/accelerator_requests', 'arqs')
            if arq['device_profile_name'] == profile_name]
    # ARQs of no instance (a failed bind request) stay after Nova's
    # DELETE ?instance=; the profile cannot go before them.
    for first in range(0, len(left), 50):
        api.call('DELETE', '/v2/accelerator_requests?arqs=%s' % ','.join(
            arq['uuid'] for arq in left[first:first + 50]),
            expected=(204,))
    api.call('DELETE', '/v2/device_profiles/%s' % profile_name,
             expected=(204,))
    return deletes, left


def run(api, arguments, nova=None):
    """The measured phase and the cleanup; print the numbers."""
    targets = plan(api, arguments.instances, arguments.arqs_per_instance)
    profile_name = 'bench-arq-%s' % uuid.uuid4().hex[:8]
    api.call('POST', '/v2/device_profiles', [{
        'name': profile_name,
        'groups': [{'resources:FPGA': str(arguments.arqs_per_instance)}]}],
        expected=(201,))
    instances = [str(uuid.uuid4()) for _ in targets]
    warm_up_instance = str(uuid.uuid4())
    try:
        warm_up(api, profile_name, warm_up_instance, targets[0], arguments,
                nova)
        with concurrent.futures.ThreadPoolExecutor(
                arguments.concurrency) as pool:
            started = time.perf_counter()
            results = list(pool.map(
                lambda item: bind_instance(api, profile_name, item[0],
                                           item[1][0], item[1][1],
                                           arguments.timeout, nova),
                zip(instances, targets, strict=True)))
            wall = time.perf_counter() - started
        states, arq_count, errors = report(
            results, arguments, wall,
            len({rp_uuid for _, rp_uuid in targets}))
    finally:
        deletes, left = clean_up(api, profile_name,
                                 [warm_up_instance] + instances)
    print(timing_line('DELETE ?instance= (sequential)', deletes[1:]))
    print('%-40s %d%s' % (
        'ARQs left after cleanup', len(left),
        ' (%s; deleted by uuid)' % ', '.join(sorted(
            '%s %s' % (arq['uuid'], arq['state']) for arq in left))
        if left else ''))
    if states['Bound'] == arq_count and not errors and not left:
        return 0
    return 1


def run_on_deployment(arguments):
    """``run`` on a deployment of ``bench.deployment`` (``--deployment``,
    with [nova] at a stand-in whose events the instances wait for with
    ``--events``); the exit code."""
    from bench import deployment as bench_deployment

    target = arguments.deployment or 'aio'
    # bench.deployment gives each FPGA region 2 handles.
    regions = math.ceil(arguments.instances * arguments.arqs_per_instance
                        / 2) + arguments.arqs_per_instance
    nova = bind_latency.NovaEvents() if arguments.events else None
    options = {}
    if nova is not None:
        options['nova'] = {'auth_type': 'admin_token',
                           'endpoint': nova.endpoint, 'token': 'nova-token'}
    deployment = bench_deployment.Deployment(
        target, argparse.Namespace(clients=regions, keep_logs=False),
        conductor_options=options)
    try:
        started = time.perf_counter()
        deployment.start()
        api = bench_api.Api('http://127.0.0.1:%d' % deployment.api_port)
        deployment.wait_for_regions(api)
        print('deployment: %s started by the script%s, %d FPGA regions x 2 '
              'handles, ready in %.1f s, CPUs %d' % (
                  target, ', instances wait for Nova events'
                  if nova else '', regions, time.perf_counter() - started,
                  os.cpu_count()))
        return run(api, arguments, nova)
    finally:
        deployment.stop()
        if nova is not None:
            nova.stop()


def parse_arguments(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--instances', type=int, default=200,
                        help='instances (M) to create and bind ARQs for '
                             '(default 200)')
    parser.add_argument('--arqs-per-instance', type=int, default=1,
                        help='ARQs (K) per instance, bound in one request '
                             'to one region (default 1)')
    parser.add_argument('--concurrency', type=int, default=16,
                        help='instances in flight at once (C, default 16)')
    parser.add_argument('--endpoint',
                        help='cyborg-api URL of a running deployment with '
                             'noauth, e.g. http://127.0.0.1:6666. Default: '
                             'start a cyborg-aio with a fleet big enough')
    parser.add_argument('--timeout', type=float, default=120,
                        help='seconds an instance\'s bind may take to '
                             'resolve (default 120)')
    parser.add_argument('--deployment', choices=('aio', 'processes'),
                        help='start this deployment (bench/deployment.py: '
                             'processes are cyborg-api, -conductor and '
                             '-agent over RabbitMQ on MariaDB) instead of '
                             'the default cyborg-aio')
    parser.add_argument('--events', action='store_true',
                        help='configure [nova] at a stand-in and have each '
                             'instance wait for its event, as Nova does, '
                             'instead of polling (implies --deployment aio '
                             'unless given)')
    parser.add_argument('--latency', action='store_true',
                        help='instead: one bind at a time, PATCH -> Bound '
                             'next to the agent call, on deployments the '
                             'script starts (bench/bind_latency.py)')
    bind_latency.add_arguments(parser)
    return bench.parse_arguments(
        parser, argv, QUICK,
        '%(instances)d instances x %(arqs_per_instance)d '
        'ARQs, concurrency %(concurrency)d, to check '
        'that the script works')


def main(argv=None):
    arguments = parse_arguments(argv)
    if arguments.latency:
        return bind_latency.run(arguments)
    if arguments.deployment or arguments.events:
        return run_on_deployment(arguments)
    all_in_one = None
    if arguments.endpoint:
        api = bench_api.Api(arguments.endpoint)
        print('deployment: %s, CPUs %d' % (api.endpoint, os.cpu_count()))
    else:
        per_region = INSTANCES_PER_REGION * arguments.arqs_per_instance
        regions = math.ceil(arguments.instances / INSTANCES_PER_REGION)
        all_in_one = AllInOne(regions, per_region)
        api = bench_api.Api(all_in_one.endpoint)
    exit_code = 1
    try:
        if all_in_one:
            started = time.perf_counter()
            all_in_one.start()
            all_in_one.wait_for_fleet(api)
            print('deployment: cyborg-aio started by the script, %d FPGA '
                  'regions x %d handles, ready in %.1f s, CPUs %d' % (
                      all_in_one.regions, all_in_one.handles_per_region,
                      time.perf_counter() - started, os.cpu_count()))
        exit_code = run(api, arguments)
        return exit_code
    finally:
        if all_in_one:
            # A failed run keeps the log, to see why.
            all_in_one.stop(keep_log=exit_code != 0)


if __name__ == '__main__':
    sys.exit(main())
