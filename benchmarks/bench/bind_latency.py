"""The latency of one bind next to the agent call it needs (``arq_bind.py
--latency``).

For each target (``processes``: cyborg-api, one cyborg-conductor and one
cyborg-agent over RabbitMQ on MariaDB; ``aio``: one cyborg-aio), started
by ``bench.deployment.Deployment``, the script binds one ARQ at a time:
``POST`` an ARQ, send the ``PATCH`` binding it, then ``GET
?instance=X&bind_state=resolved`` back to back (no sleep) until it
answers 200. PATCH -> Bound runs from sending the PATCH to that 200, so it
is late by at most one GET (whose median is printed as the resolution).
Then, apart, the agent call a bind makes: ``AgentAPI.prepare_arqs`` for
one attach handle of the agent's fleet, sent from this process over the
deployment's RabbitMQ as the conductor sends it (the all-in-one's own
conductor calls its agent in-process, which the ``local`` line measures:
the same call through ``cyborg.rpc``'s local dispatch to an AgentManager
of this process with the same fake fleet).

The CPU the services used per timed bind (its POST, PATCH, GETs and
DELETE and the binder's work, from ``/proc``, workers included) is
printed too: on a shared machine it moves less than the latencies do.

With ``--nova`` each target is started a second time with ``[nova]``
pointing at a stand-in of Nova's events API in this process, and the
time from sending the PATCH to the arrival of the instance's
``accelerator-request-bound`` event is printed too, with the number of
event requests per instance (one is expected).
"""

import argparse
import http.server
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid

import bench
from bench import api as bench_api

# FPGA regions of the agent's fleet (2 handles each): room for the binds.
REGIONS = 2
# How long one bind may take before the run gives up.
BIND_DEADLINE = 30
# Binds timed with --quick.
QUICK_BINDS = 3
# The folder of the scripts (arq_bind.py runs each target in a child).
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def service_cpu(deployment):
    """CPU seconds (user + system) used so far by each service of
    ``deployment``, its worker processes included (a service's workers
    share the process group of the process it started)."""
    groups = {service.process.pid: script
              for script, service in deployment.services.items()
              if service.process is not None}
    ticks = os.sysconf('SC_CLK_TCK')
    used = dict.fromkeys(groups.values(), 0.0)
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % pid) as stat_file:
                # The fields after the command name, which may hold spaces.
                fields = stat_file.read().rsplit(')', 1)[1].split()
        except OSError:
            continue  # ended meanwhile
        script = groups.get(int(fields[2]))
        if script is not None:
            used[script] += (int(fields[11]) + int(fields[12])) / ticks
    return used


def summary(name, seconds):
    """One line: count, median and p95 in milliseconds."""
    return '%-44s n=%-4d median=%8.2f ms  p95=%8.2f ms' % (
        name, len(seconds), statistics.median(seconds) * 1000,
        bench.percentile(seconds, 0.95) * 1000)


class NovaEvents:
    """Nova's ``POST /os-server-external-events`` on a port of 127.0.0.1,
    noting when the first event of each server arrived."""

    def __init__(self):
        self.arrived = {}
        self.requests = {}
        self._changed = threading.Condition()
        events = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get('Content-Length') or 0)
                body = json.loads(self.rfile.read(length) or b'{}')
                now = time.perf_counter()
                answer = {'events': [dict(event, code=200)
                                     for event in body.get('events', [])]}
                data = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                events.record(now, body.get('events', []))

            def log_message(self, *args):
                pass

        self._server = http.server.ThreadingHTTPServer(('127.0.0.1', 0),
                                                       Handler)
        self._server.daemon_threads = True
        self.endpoint = 'http://127.0.0.1:%d/v2.1' % self._server.server_port
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name='nova-events', daemon=True)
        self._thread.start()

    def record(self, now, events):
        with self._changed:
            for server in {event.get('server_uuid') for event in events}:
                self.arrived.setdefault(server, now)
                self.requests[server] = self.requests.get(server, 0) + 1
            self._changed.notify_all()

    def wait_for(self, server, timeout):
        """When the first event of ``server`` arrived (perf_counter)."""
        with self._changed:
            if not self._changed.wait_for(lambda: server in self.arrived,
                                          timeout):
                raise RuntimeError('no event for server %s within %s s'
                                   % (server, timeout))
            return self.arrived[server]

    def stop(self):
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)


def bind_one(api, profile_name, hostname, rp_uuid, nova=None):
    """Create and bind one ARQ; (PATCH, PATCH -> Bound, PATCH -> event,
    GET durations), each in seconds (the event's None without ``nova``)."""
    arq = api.call('POST', '/v2/accelerator_requests',
                   {'device_profile_name': profile_name},
                   expected=(201,)).json()['arqs'][0]
    instance = str(uuid.uuid4())
    ops = [{'path': '/hostname', 'op': 'add', 'value': hostname},
           {'path': '/device_rp_uuid', 'op': 'add', 'value': rp_uuid},
           {'path': '/instance_uuid', 'op': 'add', 'value': instance}]
    path = ('/v2/accelerator_requests?instance=%s&bind_state=resolved'
            % instance)
    gets = []
    sent = time.perf_counter()
    api.call('PATCH', '/v2/accelerator_requests', {arq['uuid']: ops},
             expected=(202,))
    answered = time.perf_counter()
    while True:
        asked = time.perf_counter()
        response = api.call('GET', path, expected=(200, 423))
        resolved = time.perf_counter()
        gets.append(resolved - asked)
        if response.status_code == 200:
            break
        if resolved - sent > BIND_DEADLINE:
            raise RuntimeError('ARQ %s not resolved within %d s'
                               % (arq['uuid'], BIND_DEADLINE))
    state = response.json()['arqs'][0]['state']
    if state != 'Bound':
        raise RuntimeError('ARQ %s ended %s' % (arq['uuid'], state))
    event = None
    if nova is not None:
        event = nova.wait_for(instance, BIND_DEADLINE) - sent
    api.call('DELETE', '/v2/accelerator_requests?instance=%s' % instance,
             expected=(204,))
    return answered - sent, resolved - sent, event, gets


def agent_arq(fleet_path, host):
    """The ``prepare_arqs`` dict of an attach handle of the fake fleet of
    ``host``, as the conductor sends it (no hold: nothing is recorded)."""
    from cyborg.agent.drivers import fake

    for device in fake.FakeDriver(fleet_path, host).discover():
        pending = list(device.deployables)
        while pending:
            deployable = pending.pop()
            pending.extend(deployable.children)
            if deployable.attach_handles:
                handle = deployable.attach_handles[0]
                return {'uuid': str(uuid.uuid4()),
                        'driver_name': 'fake_driver',
                        'deployable_name': deployable.name,
                        'attach_type': handle.attach_type,
                        'attach_info': handle.attach_info,
                        'request_group': {}, 'hold': None,
                        'bitstream_id': None}
    raise RuntimeError('the fleet of %s has no attach handle' % host)


def time_agent_calls(agents, host, arq, calls):
    """``calls`` prepare_arqs calls for ``arq`` on ``host``; their
    durations after two untimed ones."""
    from cyborg import context as cyborg_context

    context = cyborg_context.get_admin_context()

    def prepare():
        answer = agents.prepare_arqs(context, host, [arq], timeout=30)
        if not answer[arq['uuid']]['prepared']:
            raise RuntimeError('the agent refused: %s' % answer)
    return time_calls(prepare, calls)


def time_calls(function, calls):
    """Durations of ``calls`` calls of ``function()`` after two untimed."""
    durations = []
    for number in range(calls + 2):
        started = time.perf_counter()
        function()
        if number >= 2:
            durations.append(time.perf_counter() - started)
    return durations


# The statements a bind needs besides its two commits, at the least: read
# and lock the ARQ, write its binding (state, host, lease, handle), read and
# lock a free attach handle, take it; then write Bound.
BIND_STATEMENTS = 5


def _floor_table(connection):
    """A one-row table of ``connection``'s database; (commit, statement):
    one row changed and committed, one primary-key read."""
    cursor = connection.cursor()
    cursor.execute('CREATE TABLE bench_path_floor (id INT PRIMARY KEY, '
                   'n INT NOT NULL) ENGINE=InnoDB')
    cursor.execute('INSERT INTO bench_path_floor VALUES (1, 0)')
    connection.commit()

    def commit():
        cursor.execute('UPDATE bench_path_floor SET n = n + 1 WHERE id = 1')
        connection.commit()

    def statement():
        cursor.execute('SELECT n FROM bench_path_floor WHERE id = 1')
        cursor.fetchall()

    return commit, statement


def path_floor(deployment, api, agent_call, calls):
    """The round trips a bind cannot do without, each timed alone
    ``calls`` times: ``{name: durations}``.

    A PATCH is an HTTP request (``GET /``: the version document, no
    database, no RPC) and an RPC call to a conductor (``ping``), which
    commits the bind (``commit``: one row changed and committed on the
    deployment's MariaDB, through the services' driver); then the agent
    call (``agent_call``, timed already) and the commit that records
    Bound. Their sum is a lower bound of PATCH -> Bound that leaves out
    every statement but the commits and the GET that sees Bound; the
    second bound adds BIND_STATEMENTS statements and that GET, an HTTP
    request and one statement (``statement``: a primary-key read).
    """
    import sqlalchemy as sa
    from cyborg.conductor import rpcapi as conductor_rpcapi
    from cyborg import context as cyborg_context

    from bench import deployment as bench_deployment

    context = cyborg_context.get_admin_context()
    conductor = conductor_rpcapi.ConductorAPI()
    engine = sa.create_engine(bench_deployment.MARIADB_URL
                              + deployment.db_name,
                              poolclass=sa.pool.NullPool)
    connection = engine.raw_connection()
    try:
        commit, statement = _floor_table(connection)
        return {'http': time_calls(lambda: api.call('GET', '/'), calls),
                'conductor': time_calls(lambda: conductor.ping(context),
                                        calls),
                'commit': time_calls(commit, calls),
                'statement': time_calls(statement, calls),
                'agent': agent_call}
    finally:
        connection.rollback()
        connection.close()
        engine.dispose()


def print_path_floor(floor, bound):
    """The floor's parts, its two sums and the ratios, by medians."""
    parts = {name: statistics.median(durations)
             for name, durations in floor.items()}
    round_trips = (parts['http'] + parts['conductor'] + parts['agent']
                   + 2 * parts['commit'])
    with_statements = (round_trips + parts['http']
                       + (BIND_STATEMENTS + 1) * parts['statement'])
    for name, label in (('http', 'HTTP round trip (GET /)'),
                        ('conductor', 'conductor call (ping) over RabbitMQ'),
                        ('commit', 'commit of one changed row, MariaDB'),
                        ('statement', 'one primary-key read, MariaDB')):
        print(summary(label, floor[name]))
    print('%-44s %8.2f ms = HTTP + conductor + agent + 2 commits' % (
        'path floor, round trips (medians)', round_trips * 1000))
    print('%-44s %8.2f ms = + %d statements + a GET (HTTP + 1)' % (
        'path floor with statements and the GET', with_statements * 1000,
        BIND_STATEMENTS))
    print('%-44s %.1fx, %.1fx with statements and the GET' % (
        'ratio path floor / agent call', round_trips / parts['agent'],
        with_statements / parts['agent']))
    print('%-44s %.1fx' % ('ratio PATCH -> Bound / path floor',
                           statistics.median(bound) / with_statements))


def local_agent_calls(fleet_path, calls):
    """The agent call through local dispatch, as the all-in-one makes it:
    an AgentManager of this process, with the fake fleet."""
    from cyborg.agent import manager as agent_manager
    from cyborg.agent import rpcapi as agent_rpcapi
    from cyborg import conf
    from cyborg import rpc

    host = 'bench-local-%s' % uuid.uuid4().hex[:8]
    conf.CONF.set_override('fake_inventory', fleet_path, group='agent')
    manager = agent_manager.AgentManager(host, ['fake_driver'])
    rpc.register_local_endpoint(agent_rpcapi.TOPIC, host, manager)
    try:
        return time_agent_calls(agent_rpcapi.AgentAPI(), host,
                                agent_arq(fleet_path, host), calls)
    finally:
        rpc.unregister_local_endpoint(agent_rpcapi.TOPIC, host)
        conf.CONF.clear_override('fake_inventory', group='agent')


def new_deployment(target, arguments, nova=None):
    """A ``bench.deployment.Deployment`` of ``target``, not started, with
    ``[nova]`` at ``nova``'s stand-in unless it is None."""
    from bench import deployment as bench_deployment

    options = {}
    if nova is not None:
        options['nova'] = {'auth_type': 'admin_token',
                           'endpoint': nova.endpoint, 'token': 'nova-token'}
    return bench_deployment.Deployment(
        target, argparse.Namespace(clients=REGIONS,
                                   keep_logs=arguments.keep_logs),
        conductor_options=options)


def bind_series(api, deployment, regions, arguments, nova=None):
    """``arguments.warm_up`` untimed binds, then ``arguments.binds`` timed,
    one at a time: ``({name: durations}, {service: CPU ms per bind})``.

    The durations are named ``patch``, ``bound``, ``get`` and, when the
    instances' events came, ``event``.
    """
    profile_name = 'bench-latency-%s' % uuid.uuid4().hex[:8]
    api.call('POST', '/v2/device_profiles', [{
        'name': profile_name, 'groups': [{'resources:FPGA': '1'}]}],
        expected=(201,))
    numbers = {'patch': [], 'bound': [], 'get': [], 'event': []}
    cpu_before = None
    for number in range(arguments.binds + arguments.warm_up):
        if number == arguments.warm_up:
            cpu_before = service_cpu(deployment)
        patch, resolved, event, polls = bind_one(
            api, profile_name, deployment.agent_host,
            regions[number % len(regions)], nova)
        if number >= arguments.warm_up:
            numbers['patch'].append(patch)
            numbers['bound'].append(resolved)
            numbers['get'].extend(polls)
            if event is not None:
                numbers['event'].append(event)
    cpu_after = service_cpu(deployment)
    api.call('DELETE', '/v2/device_profiles/%s' % profile_name,
             expected=(204,))
    if not numbers['event']:
        del numbers['event']
    # The services' CPU per timed bind: its POST, PATCH, GETs and DELETE,
    # and the binder's work (steadier than the latencies on a shared
    # machine).
    return numbers, {
        script: (cpu_after[script] - cpu_before[script]) * 1000
        / arguments.binds for script in cpu_after}


def print_numbers(numbers, cpu, nova=None):
    """The lines of one target's ``measure``."""
    bound, agent = numbers['bound'], numbers['agent']
    print(summary('PATCH (202 received)', numbers['patch']))
    print(summary('PATCH -> Bound (first GET answering 200)', bound))
    print(summary('  GET ?bind_state=resolved (resolution)', numbers['get']))
    print(summary('agent prepare_arqs over RabbitMQ', agent))
    print('%-44s %s' % ('CPU ms per bind (POST to DELETE)', ', '.join(
        '%s %.1f' % (script, cpu[script]) for script in sorted(cpu))))
    if 'local' in numbers:
        print(summary('agent prepare_arqs, local dispatch', numbers['local']))
    if 'event' in numbers:
        print(summary('PATCH -> Nova event received', numbers['event']))
        counts = sorted(set(nova.requests.values()))
        print('%-44s %s' % ('event requests per instance',
                            ', '.join(map(str, counts))))
    print('%-44s median %.1fx  p95 %.1fx' % (
        'ratio PATCH -> Bound / agent call',
        statistics.median(bound) / statistics.median(agent),
        bench.percentile(bound, 0.95) / bench.percentile(agent, 0.95)))
    if 'floor' in numbers:
        print_path_floor(numbers['floor'], bound)


def measure(target, arguments, nova=None):
    """Start ``target``, bind ``arguments.binds`` ARQs one at a time and
    time the agent call; print and return the numbers."""
    from cyborg.agent import rpcapi as agent_rpcapi

    deployment = new_deployment(target, arguments, nova)
    try:
        started = time.perf_counter()
        deployment.start()
        api = bench_api.Api('http://127.0.0.1:%d' % deployment.api_port)
        regions = deployment.wait_for_regions(api)
        deployment.connect_rpc([])
        print('\n%s%s: ready in %.1f s' % (
            target, ' with [nova]' if nova else '',
            time.perf_counter() - started))
        numbers, cpu = bind_series(api, deployment, regions, arguments,
                                   nova)
        numbers['agent'] = time_agent_calls(
            agent_rpcapi.AgentAPI(), deployment.agent_host,
            agent_arq(deployment.fleet_path, deployment.agent_host),
            arguments.binds)
        if target == 'processes':
            numbers['floor'] = path_floor(deployment, api, numbers['agent'],
                                          arguments.binds)
        if target == 'aio':
            numbers['local'] = local_agent_calls(deployment.fleet_path,
                                                 arguments.binds)
        print_numbers(numbers, cpu, nova)
        return numbers
    finally:
        deployment.stop()


def run(arguments):
    """Each target of ``arguments.target``, without and (``--nova``) with
    Nova; the exit code.

    Each deployment is measured in a process of its own: the Placement
    a ``processes`` deployment serves in this process cannot be started
    twice in one process.
    """
    if arguments.quick:
        arguments.binds, arguments.warm_up = QUICK_BINDS, 1
    targets = (['processes', 'aio'] if arguments.target == 'both'
               else [arguments.target])
    if arguments.nova:
        modes = (False, True)
    else:
        modes = (arguments.with_nova,)
    runs = [(target, nova) for target in targets for nova in modes]
    if len(runs) == 1:
        if not runs[0][1]:
            measure(targets[0], arguments)
            return 0
        nova = NovaEvents()
        try:
            measure(targets[0], arguments, nova)
        finally:
            nova.stop()
        return 0
    exit_code = 0
    for target, nova in runs:
        command = [sys.executable, os.path.join(HERE, 'arq_bind.py'),
                   '--latency', '--target', target,
                   '--binds', str(arguments.binds),
                   '--warm-up', str(arguments.warm_up)]
        if arguments.quick:
            command.append('--quick')
        if nova:
            command.append('--with-nova')
        if arguments.keep_logs:
            command.append('--keep-logs')
        sys.stdout.flush()
        exit_code = subprocess.call(command) or exit_code
    return exit_code


def add_arguments(parser):
    """The options of the --latency mode."""
    group = parser.add_argument_group('--latency mode')
    group.add_argument('--binds', type=int, default=30,
                       help='binds timed per target (default 30)')
    group.add_argument('--warm-up', type=int, default=3,
                       help='untimed binds first (default 3)')
    group.add_argument('--target', default='both',
                       choices=('processes', 'aio', 'both'),
                       help='deployment measured (default both)')
    group.add_argument('--nova', action='store_true',
                       help='measure each target with [nova] as well')
    group.add_argument('--with-nova', action='store_true',
                       help='measure each target with [nova] only')
    group.add_argument('--keep-logs', action='store_true',
                       help='keep the services\' logs')

