"""Requests per second of one API call under concurrent clients, per server.

The same database (``--devices`` GPU rows inserted, default 1000) is
served by cyborg-api (cheroot, one process, ``[api] threads``) and by
gunicorn running ``cyborg.wsgi.api:application`` with ``--workers``
processes (default one per CPU), each with the sync worker and with the
gthread worker (4 threads each). ``--clients`` client connections (16)
ask ``--path`` (``/v2/devices?limit=100``) back to back for ``--seconds``
(15) after a warm-up second; the clients run in ``--client-processes``
(2) processes, so that Python's lock in the load generator is not what is
measured. Prints, per server, requests/s, median and p95 latency, the
errors, and the CPU seconds the server's processes and the clients used.

The servers run without Keystone (``auth_strategy = noauth``); GETs need
no conductor. The database of ``--database-url`` (MariaDB through
mysqlclient by default, PyMySQL without it) is created and dropped by the
script; ``sqlite`` gives a file in a temporary directory.
"""

import argparse
import http.client
import multiprocessing
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

import sqlalchemy as sa

import bench


MARIADB_URL = bench.mariadb_server_url()
QUICK = {'devices': 50, 'seconds': 2, 'clients': 4}
SERVERS = ('threaded', 'gunicorn-sync', 'gunicorn-gthread')
GTHREADS = 4
START_TIMEOUT = 60


def free_port():
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


class Database:
    """A migrated cyborg database with ``devices`` GPU rows."""

    def __init__(self, url, directory):
        self.directory = directory
        self.admin_engine = None
        if url == 'sqlite':
            self.url = 'sqlite:///%s' % os.path.join(directory, 'cyborg.db')
            self.name = None
        else:
            self.name = 'cyborg_api_bench_%s' % uuid.uuid4().hex[:8]
            self.admin_engine = sa.create_engine(
                url, isolation_level='AUTOCOMMIT',
                poolclass=sa.pool.NullPool)
            with self.admin_engine.connect() as connection:
                connection.execute(sa.text(
                    'CREATE DATABASE %s CHARACTER SET utf8mb4' % self.name))
            self.url = url.rstrip('/') + '/' + self.name

    def migrate(self):
        config_path = os.path.join(self.directory, 'dbsync.conf')
        with open(config_path, 'w') as config_file:
            config_file.write('[database]\nconnection = %s\n' % self.url)
        script = os.path.join(os.path.dirname(sys.executable), 'cyborg-dbsync')
        subprocess.run([script, '--config-file', config_path, 'upgrade'],
                       check=True, capture_output=True)

    def add_devices(self, count):
        engine = sa.create_engine(self.url, poolclass=sa.pool.NullPool)
        devices = sa.Table('devices', sa.MetaData(), autoload_with=engine)
        now = sa.func.now()
        rows = [{'uuid': str(uuid.uuid4()), 'type': 'GPU',
                 'vendor': '10de', 'model': 'bench GPU %d' % (number % 4),
                 'std_board_info': '{"device_id": "1eb8", "class": "0302"}',
                 'vendor_board_info': '{}',
                 'hostname': 'bench-host-%03d' % (number // 8),
                 'status': 'enabled'} for number in range(count)]
        with engine.begin() as connection:
            for first in range(0, len(rows), 500):
                connection.execute(devices.insert().values(
                    created_at=now), rows[first:first + 500])
        engine.dispose()

    def drop(self):
        if self.admin_engine is not None:
            with self.admin_engine.connect() as connection:
                connection.execute(sa.text('DROP DATABASE IF EXISTS %s'
                                           % self.name))
            self.admin_engine.dispose()


class Server:
    """One API server process (group) on a free port."""

    def __init__(self, kind, database_url, directory, workers):
        self.kind = kind
        self.port = free_port()
        self.directory = directory
        self.workers = workers
        self.config_path = os.path.join(directory, '%s.conf' % kind)
        self.log_path = os.path.join(directory, '%s.log' % kind)
        with open(self.config_path, 'w') as config_file:
            config_file.write(
                '[DEFAULT]\nauth_strategy = noauth\n'
                'transport_url = rabbit://guest:guest@127.0.0.1:5672/\n'
                '[database]\nconnection = %s\n'
                '[api]\nhost_ip = 127.0.0.1\nport = %d\n'
                % (database_url, self.port))
        self.process = None

    def describe(self):
        if self.kind == 'threaded':
            return 'cyborg-api (cheroot, 1 process)'
        if self.kind == 'gunicorn-sync':
            return 'gunicorn sync, %d workers' % self.workers
        return 'gunicorn gthread, %d workers x %d threads' % (
            self.workers, GTHREADS)

    def start(self):
        bin_dir = os.path.dirname(sys.executable)
        if self.kind == 'threaded':
            command = [os.path.join(bin_dir, 'cyborg-api'),
                       '--config-file', self.config_path]
        else:
            command = [os.path.join(bin_dir, 'gunicorn'),
                       '--workers', str(self.workers),
                       '--bind', '127.0.0.1:%d' % self.port,
                       '--backlog', '128', '--log-level', 'warning']
            if self.kind == 'gunicorn-gthread':
                command += ['--worker-class', 'gthread',
                            '--threads', str(GTHREADS)]
            command.append('cyborg.wsgi.api:application')
        environment = dict(os.environ,
                           OS_CYBORG_CONFIG_FILES=self.config_path)
        with open(self.log_path, 'wb') as log_file:
            self.process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log_file,
                stderr=subprocess.STDOUT, start_new_session=True,
                env=environment)

    def wait_ready(self, path):
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError('%s exited:\n%s' % (self.kind, self.log()))
            try:
                # Each worker builds its application on its first request.
                for _ in range(4 * self.workers):
                    connection = http.client.HTTPConnection(
                        '127.0.0.1', self.port, timeout=30)
                    connection.request('GET', path)
                    if connection.getresponse().status != 200:
                        raise OSError('not ready')
                    connection.close()
                return
            except OSError:
                time.sleep(0.3)
        raise RuntimeError('%s not ready:\n%s' % (self.kind, self.log()))

    def log(self):
        with open(self.log_path, errors='replace') as log_file:
            return log_file.read()[-3000:]

    def cpu_seconds(self):
        """User and system CPU seconds of the process group so far."""
        total = 0.0
        ticks = os.sysconf('SC_CLK_TCK')
        for name in os.listdir('/proc'):
            if not name.isdigit():
                continue
            try:
                if os.getpgid(int(name)) != self.process.pid:
                    continue
                with open('/proc/%s/stat' % name) as stat:
                    fields = stat.read().rsplit(')', 1)[1].split()
            except (OSError, ProcessLookupError):
                continue
            total += (int(fields[11]) + int(fields[12])) / ticks
        return total

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def client_process(port, path, connections, start_at, stop_at, results):
    """``connections`` threads asking ``path`` until ``stop_at``; puts
    (latencies of requests started after ``start_at``, errors, CPU s)."""
    import threading

    latencies = []
    errors = []
    lock = threading.Lock()

    def loop():
        connection = http.client.HTTPConnection('127.0.0.1', port, timeout=60)
        mine = []
        failed = 0
        while True:
            started = time.time()
            if started >= stop_at:
                break
            try:
                connection.request('GET', path)
                response = connection.getresponse()
                response.read()
                ok = response.status == 200
            except (OSError, http.client.HTTPException):
                ok = False
                connection.close()
                connection = http.client.HTTPConnection('127.0.0.1', port,
                                                        timeout=60)
            ended = time.time()
            if started >= start_at and ended <= stop_at:
                if ok:
                    mine.append(ended - started)
                else:
                    failed += 1
        connection.close()
        with lock:
            latencies.extend(mine)
            errors.append(failed)

    cpu_before = time.process_time()
    threads = [threading.Thread(target=loop) for _ in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    results.put((latencies, sum(errors), time.process_time() - cpu_before))


def load(server, arguments):
    """Run the clients against ``server``; a dict of the numbers."""
    context = multiprocessing.get_context('fork')
    results = context.Queue()
    start_at = time.time() + 1.0 + 1.0  # start-up, then a warm-up second
    stop_at = start_at + arguments.seconds
    per_process = [arguments.clients // arguments.client_processes] * \
        arguments.client_processes
    for index in range(arguments.clients % arguments.client_processes):
        per_process[index] += 1
    processes = [context.Process(
        target=client_process,
        args=(server.port, arguments.path, count, start_at - 1.0, stop_at,
              results)) for count in per_process if count]
    for process in processes:
        process.start()
    time.sleep(max(0, start_at - time.time()))
    cpu_at_start = server.cpu_seconds()
    time.sleep(max(0, stop_at - time.time()))
    cpu_at_stop = server.cpu_seconds()
    latencies, errors, client_cpu = [], 0, 0.0
    for _ in processes:
        found, failed, cpu = results.get(timeout=120)
        latencies += found
        errors += failed
        client_cpu += cpu
    for process in processes:
        process.join()
    # The clients' first second (warm-up) counts in their CPU time too.
    window = arguments.seconds + 1.0
    return {'requests': len(latencies), 'errors': errors,
            'rate': len(latencies) / arguments.seconds,
            'median': statistics.median(latencies) if latencies else 0,
            'p95': bench.percentile(latencies, 0.95) if latencies else 0,
            'server_cpu': (cpu_at_stop - cpu_at_start) / arguments.seconds,
            'client_cpu': client_cpu / window}


def parse_arguments(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--database-url', default=MARIADB_URL,
                        help='server URL to create the database on, or '
                             '"sqlite" (default %s)' % MARIADB_URL)
    parser.add_argument('--devices', type=int, default=1000,
                        help='device rows (default 1000)')
    parser.add_argument('--path', default='/v2/devices?limit=100',
                        help='what the clients ask (default '
                             '/v2/devices?limit=100)')
    parser.add_argument('--clients', type=int, default=16,
                        help='concurrent client connections (default 16)')
    parser.add_argument('--client-processes', type=int, default=2,
                        help='processes the clients run in (default 2)')
    parser.add_argument('--seconds', type=float, default=15,
                        help='measured seconds per server (default 15)')
    parser.add_argument('--workers', type=int, default=os.cpu_count(),
                        help='gunicorn worker processes (default: one per '
                             'CPU, %d)' % os.cpu_count())
    parser.add_argument('--servers', default=','.join(SERVERS),
                        help='comma-separated, of %s (default all)'
                             % ', '.join(SERVERS))
    return bench.parse_arguments(
        parser, argv, QUICK, '%(devices)d devices, %(clients)d clients for '
        '%(seconds)d s on each server, to check that the script '
        'works')


def main(argv=None):
    arguments = parse_arguments(argv)
    kinds = [kind.strip() for kind in arguments.servers.split(',')]
    unknown = set(kinds) - set(SERVERS)
    if unknown:
        raise SystemExit('unknown servers: %s' % ', '.join(sorted(unknown)))
    directory = tempfile.mkdtemp(prefix='cyborg-bench-api-')
    database = Database(arguments.database_url, directory)
    exit_code = 0
    try:
        database.migrate()
        database.add_devices(arguments.devices)
        print('GET %s, %d clients in %d processes, %d s per server, %d '
              'devices, database %s, CPUs %d, load average %.1f' % (
                  arguments.path, arguments.clients,
                  arguments.client_processes, arguments.seconds,
                  arguments.devices, database.url.split('://')[0],
                  os.cpu_count(), os.getloadavg()[0]))
        for kind in kinds:
            server = Server(kind, database.url, directory, arguments.workers)
            try:
                server.start()
                server.wait_ready(arguments.path)
                numbers = load(server, arguments)
            finally:
                server.stop()
            if numbers['errors'] or not numbers['requests']:
                exit_code = 1
            print('%-42s %7.1f req/s  median %6.1f ms  p95 %6.1f ms  '
                  'errors %d  CPU: server %.2f, clients %.2f' % (
                      server.describe(), numbers['rate'],
                      numbers['median'] * 1000, numbers['p95'] * 1000,
                      numbers['errors'], numbers['server_cpu'],
                      numbers['client_cpu']))
    finally:
        database.drop()
        shutil.rmtree(directory, ignore_errors=True)
    return exit_code


if __name__ == '__main__':
    sys.exit(main())
