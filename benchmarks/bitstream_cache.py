"""A bind that loads a bitstream, then the same bind again: what the
agent's bitstream cache saves.

The script starts a ``cyborg-aio`` of its own (its embedded Glance, a
fake-driver fleet of 2 x ``--rounds`` FPGA regions of one card type, no
load time). Each round uploads a new bitstream of ``--size-mib`` MiB to
Glance and a device profile naming it (``accel:bitstream_id``), then binds
one ARQ of that profile on a region (the agent downloads the image: cold)
and one on another region of the host (the agent finds it in its cache:
warm). A bind is timed from its PATCH to the ``GET
?instance=X&bind_state=resolved`` that answers 200 (polled every 10 ms).
Prints each round's times, the medians and the ratio cold / warm. The exit
code is 1 unless every ARQ was Bound. ::

    .venv/bin/python benchmarks/bitstream_cache.py [--rounds 5 --size-mib 64]
    .venv/bin/python benchmarks/bitstream_cache.py --quick   # 1 round, 4 MiB
"""

# cyborg first: it selects oslo.service's threading backend.
import cyborg  # noqa: F401

import argparse
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

from cyborg import conf
from cyborg.clients import glance as glance_client

import bench
from bench import api as bench_api

START_TIMEOUT = 180
BIND_TIMEOUT = 120
POLL_INTERVAL = 0.01
BOARD = 'bench_board'


class AllInOne:
    """A ``cyborg-aio`` with its Glance and ``regions`` FPGA regions."""

    def __init__(self, regions):
        self.regions = regions
        self.directory = tempfile.mkdtemp(prefix='cyborg-bench-cache-')
        self.host = 'bench-cache-%s' % uuid.uuid4().hex[:8]
        self.port = bench_api.free_port()
        self.glance_port = bench_api.free_port()
        self.endpoint = 'http://127.0.0.1:%d' % self.port
        self.log_path = os.path.join(self.directory, 'cyborg-aio.log')
        self.process = None

    def start(self):
        fleet_path = os.path.join(self.directory, 'fleet.yaml')
        with open(fleet_path, 'w') as fleet_file:
            yaml.safe_dump({'fpgas': [{
                'count': self.regions, 'vendor': '0x8086',
                'vendor_name': 'intel', 'board': BOARD,
                'model': 'bench FPGA',
                'regions': [{'pfs': 1, 'vfs_per_pf': 1,
                             'program': {'seconds': 0,
                                         'result': 'success'}}]}]},
                fleet_file)
        config_path = os.path.join(self.directory, 'cyborg-aio.conf')
        with open(config_path, 'w') as config_file:
            config_file.write(
                '[DEFAULT]\nhost = %s\n[api]\nport = %d\n'
                'fleet_page_port = %d\n'
                '[aio]\nstate_dir = %s\nplacement_port = %d\n'
                'glance_port = %d\n'
                '[agent]\nfake_inventory = %s\n' % (
                    self.host, self.port, bench_api.free_port(),
                    os.path.join(self.directory, 'state'),
                    bench_api.free_port(), self.glance_port, fleet_path))
        script = os.path.join(os.path.dirname(sys.executable), 'cyborg-aio')
        with open(self.log_path, 'wb') as log_file:
            self.process = subprocess.Popen(
                [script, '--config-file', config_path],
                stdin=subprocess.DEVNULL, stdout=log_file,
                stderr=subprocess.STDOUT, start_new_session=True)

    def wait_for_fleet(self, api):
        """{rp_uuid: hostname} once every region has its provider."""
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError('cyborg-aio exited with %s:\n%s' % (
                    self.process.returncode, self.log_tail()))
            try:
                regions = bench_api.fpga_regions(api)
                if len(regions) == self.regions:
                    return {rp: host for rp, (host, _) in regions.items()}
            except (requests.ConnectionError, RuntimeError, ValueError):
                pass
            time.sleep(0.5)
        raise RuntimeError('the fleet did not appear within %d s:\n%s'
                           % (START_TIMEOUT, self.log_tail()))

    def glance(self):
        """A GlanceClient of the all-in-one's Glance (no Keystone)."""
        for name, value in (('auth_type', 'none'), ('endpoint_override',
                            'http://127.0.0.1:%d' % self.glance_port)):
            conf.CONF.set_override(name, value, group=glance_client.GROUP)
        return glance_client.GlanceClient(conf.CONF)

    def log_tail(self, lines=30):
        with open(self.log_path, errors='replace') as log_file:
            return ''.join(log_file.readlines()[-lines:])

    def log(self):
        with open(self.log_path, errors='replace') as log_file:
            return log_file.read()

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        shutil.rmtree(self.directory, ignore_errors=True)


def upload(glance, directory, size_mib):
    """A new bitstream of ``size_mib`` MiB for BOARD in Glance; its id."""
    path = os.path.join(directory, 'bench.gbs')
    with open(path, 'wb') as data:
        for _ in range(size_mib):
            data.write(os.urandom(1024 * 1024))
    properties = {'bs-name': 'bench', 'bs-uuid': str(uuid.uuid4()),
                  'vendor': '0x8086', 'board': BOARD, 'version': '1',
                  'driver_ver': '1', 'driver_path': '/opt',
                  'function_uuid': str(uuid.uuid4())}
    image_id = glance.upload(path, 'bench', properties, ['FPGA'])['id']
    os.unlink(path)
    return image_id


def bind(api, profile_name, hostname, rp_uuid):
    """Create and bind one ARQ; (seconds PATCH -> resolved, its state)."""
    arq = api.call('POST', '/v2/accelerator_requests',
                   {'device_profile_name': profile_name},
                   expected=(201,)).json()['arqs'][0]
    instance = str(uuid.uuid4())
    ops = [{'path': '/hostname', 'op': 'add', 'value': hostname},
           {'path': '/device_rp_uuid', 'op': 'add', 'value': rp_uuid},
           {'path': '/instance_uuid', 'op': 'add', 'value': instance}]
    path = ('/v2/accelerator_requests?instance=%s&bind_state=resolved'
            % instance)
    started = time.perf_counter()
    api.call('PATCH', '/v2/accelerator_requests', {arq['uuid']: ops},
             expected=(202,))
    while True:
        response = api.call('GET', path, expected=(200, 423))
        if response.status_code == 200:
            return (time.perf_counter() - started,
                    response.json()['arqs'][0]['state'])
        if time.perf_counter() - started > BIND_TIMEOUT:
            return time.perf_counter() - started, 'not resolved'
        time.sleep(POLL_INTERVAL)


def one_round(api, glance, directory, size_mib, targets):
    """(cold seconds, warm seconds, states) of one bitstream."""
    image_id = upload(glance, directory, size_mib)
    profile_name = 'bench-cache-%s' % uuid.uuid4().hex[:8]
    api.call('POST', '/v2/device_profiles', [{
        'name': profile_name,
        'groups': [{'resources:FPGA': '1',
                    'accel:bitstream_id': image_id}]}], expected=(201,))
    cold, cold_state = bind(api, profile_name, *targets[0])
    warm, warm_state = bind(api, profile_name, *targets[1])
    return cold, warm, [cold_state, warm_state]


def run(arguments):
    deployment = AllInOne(2 * arguments.rounds)
    deployment.start()
    try:
        api = bench_api.Api(deployment.endpoint)
        regions = sorted(deployment.wait_for_fleet(api).items())
        glance = deployment.glance()
        print('deployment: cyborg-aio started by the script, %d FPGA '
              'regions of one host, bitstreams of %d MiB'
              % (len(regions), arguments.size_mib))
        colds, warms, states = [], [], []
        for index in range(arguments.rounds):
            targets = [(host, rp) for rp, host in
                       regions[2 * index:2 * index + 2]]
            cold, warm, round_states = one_round(
                api, glance, deployment.directory, arguments.size_mib,
                targets)
            colds.append(cold)
            warms.append(warm)
            states += round_states
            print('round %-3d cold bind %9.2f ms  warm bind %9.2f ms'
                  % (index + 1, cold * 1000, warm * 1000))
        cold, warm = statistics.median(colds), statistics.median(warms)
        print('%-40s %9.2f ms' % ('median bind, download (cold)',
                                  cold * 1000))
        print('%-40s %9.2f ms' % ('median bind, from the cache (warm)',
                                  warm * 1000))
        print('%-40s %9.2f' % ('ratio cold / warm', cold / warm))
        hits = deployment.log().count('found in the bitstream cache')
        print('%-40s %d of %d' % ('warm binds served by the cache', hits,
                                  arguments.rounds))
        bound = states.count('Bound')
        print('%-40s %d of %d' % ('ARQs Bound', bound, len(states)))
        return 0 if bound == len(states) else 1
    finally:
        deployment.stop()


def parse_arguments(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--rounds', type=int, default=5,
                        help='bitstreams, each bound cold then warm')
    parser.add_argument('--size-mib', type=int, default=64,
                        help='size of each bitstream, in MiB')
    return bench.parse_arguments(
        parser, argv, {'rounds': 1, 'size_mib': 4},
        '%(rounds)d round of %(size_mib)d MiB, a few seconds')


def main(argv=None):
    return run(parse_arguments(argv))


if __name__ == '__main__':
    sys.exit(main())
