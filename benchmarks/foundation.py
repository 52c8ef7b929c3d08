"""Measure the foundation's hot paths and print the numbers.

* ``GET /v2`` through cyborg-api's threaded WSGI server (noauth), from
  several client threads with keep-alive connections.
* One conductor RPC call (``ping``) dispatched locally (the all-in-one's
  path), through oslo.messaging's ``fake://`` transport, and through
  RabbitMQ when one answers on 127.0.0.1:5672.
"""

# cyborg first: importing it selects oslo.service's threading backend, which
# oslo_messaging would otherwise set to eventlet.
import cyborg  # noqa: F401

import argparse
import concurrent.futures
import socket
import statistics
import time

import oslo_messaging
import requests
from oslo_messaging import conffixture
from oslo_config import fixture as config_fixture

from cyborg.api import app as api_app
from cyborg.api import server as api_server
from cyborg import conf
from cyborg.conductor import manager as conductor_manager
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg import context as cyborg_context
from cyborg import objects
from cyborg import rpc


def summarize(name, seconds, wall=None):
    """Print one line: count, median, p95 (milliseconds) and throughput."""
    ordered = sorted(seconds)
    p95 = ordered[max(0, int(len(ordered) * 0.95) - 1)]
    line = '%-34s n=%-5d median=%8.3f ms  p95=%8.3f ms' % (
        name, len(ordered), statistics.median(ordered) * 1000, p95 * 1000)
    if wall:
        line += '  throughput=%8.1f/s' % (len(ordered) / wall)
    print(line)


def bench_api(requests_total, threads):
    """GET /v2 through the real server from ``threads`` client threads."""
    conf.CONF.set_override('auth_strategy', 'noauth')
    server = api_server.Server(api_app.setup_app(conf.CONF), '127.0.0.1', 0,
                               threads=16, name='bench-api')
    server.start()
    url = 'http://127.0.0.1:%d/v2' % server.port
    headers = {'OpenStack-API-Version': 'accelerator 2.3'}

    def worker(count):
        session = requests.Session()
        timings = []
        for _ in range(count):
            started = time.perf_counter()
            response = session.get(url, headers=headers, timeout=10)
            timings.append(time.perf_counter() - started)
            response.raise_for_status()
        return timings

    try:
        worker(20)  # warm up: imports, connection pools
        started = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(threads) as pool:
            parts = list(pool.map(worker, [requests_total // threads] * threads))
        wall = time.perf_counter() - started
    finally:
        server.stop()
    summarize('GET /v2 (%d client threads)' % threads,
              [t for part in parts for t in part], wall)


def bench_rpc(name, transport_url, calls, local):
    """``calls`` conductor pings through one transport (or the local path)."""
    messaging_conf = conffixture.ConfFixture(conf.CONF)
    messaging_conf.setUp()
    messaging_conf.transport_url = transport_url
    conf.CONF.set_override('control_exchange', 'cyborg-bench-%d' % time.time_ns())
    rpc.init(conf.CONF)
    manager = conductor_manager.ConductorManager('bench-host')
    server = None
    if local:
        rpc.register_local_endpoint(conductor_rpcapi.TOPIC, 'bench-host', manager)
    else:
        server = rpc.get_server(
            oslo_messaging.Target(topic=conductor_rpcapi.TOPIC, server='bench-host'),
            [manager])
        server.start()
    try:
        client = conductor_rpcapi.ConductorAPI()
        context = cyborg_context.get_admin_context()
        client.ping(context)  # warm up: connections, queues
        timings = []
        started = time.perf_counter()
        for _ in range(calls):
            call_started = time.perf_counter()
            client.ping(context)
            timings.append(time.perf_counter() - call_started)
        wall = time.perf_counter() - started
    finally:
        if server is not None:
            server.stop()
            server.wait()
        rpc.cleanup()
        messaging_conf.cleanUp()
    summarize('RPC call, %s' % name, timings, wall)


def rabbit_reachable():
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(('127.0.0.1', 5672)) == 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--requests', type=int, default=2000)
    parser.add_argument('--threads', type=int, default=4)
    parser.add_argument('--calls', type=int, default=200)
    arguments = parser.parse_args()

    fixture = config_fixture.Config(conf.CONF)
    fixture.setUp()
    conf.CONF([], project='cyborg', default_config_files=[])
    objects.register_all()
    try:
        bench_api(arguments.requests, arguments.threads)
        bench_rpc('local dispatch (all-in-one)', 'fake:/', arguments.calls * 10,
                  local=True)
        bench_rpc('fake:// transport', 'fake:/', arguments.calls, local=False)
        if rabbit_reachable():
            bench_rpc('RabbitMQ', 'rabbit://guest:guest@127.0.0.1:5672/',
                      arguments.calls, local=False)
        else:
            print('RPC call, RabbitMQ: not measured (nothing on 127.0.0.1:5672)')
    finally:
        fixture.cleanUp()


if __name__ == '__main__':
    main()
