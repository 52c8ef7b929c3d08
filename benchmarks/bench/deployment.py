"""The deployments the soak runs against, and what it samples of them.

``Deployment`` starts one target of ``soak.py`` with its own RabbitMQ
virtual host and temporary directory (and, for ``processes``, its own
MariaDB database and a Placement served in this process) and removes them
all at ``stop``; ``sample_process`` reads a service's figures from /proc.
"""

# cyborg first: importing it selects oslo.service's threading backend, which
# oslo_messaging would otherwise set to eventlet (bench.bind_latency imports
# this module before anything of cyborg's).
import cyborg  # noqa: F401

import os
import shutil
import subprocess
import tempfile
import uuid

import requests
import sqlalchemy as sa
import yaml

from cyborg.aio import placement as aio_placement
from cyborg.clients import placement as placement_client
from cyborg import conf
from cyborg.tests.fixtures import messaging
from cyborg.tests.fixtures import processes

import bench
from bench import api as bench_api
from bench import fleet as bench_fleet
from bench import messaging as bench_messaging

MARIADB_URL = bench.mariadb_server_url()
START_TIMEOUT = 180


def write_fleet(path, regions):
    """The real agent's fleet: ``regions`` FPGA regions of 2 handles."""
    with open(path, 'w') as fleet_file:
        yaml.safe_dump({'fpgas': [{
            'count': regions, 'vendor': '0x8086', 'vendor_name': 'intel',
            'model': 'soak FPGA', 'regions': [{'pfs': 1, 'vfs_per_pf': 2}]}]},
            fleet_file)


def simulated_inventories(directory, host):
    """(usual, changed) reports of a simulated host: 2 FPGAs of 4 VFs, and
    the same with one GPU more."""
    usual = {'fpgas': [{'count': 2, 'vendor': '0x8086', 'vendor_name': 'intel',
                        'model': 'simulated FPGA',
                        'regions': [{'pfs': 1, 'vfs_per_pf': 4}]}]}
    changed = dict(usual, gpus=[{'count': 1, 'model': 'simulated GPU'}])
    reports = []
    for name, fleet in (('usual', usual), ('changed', changed)):
        path = os.path.join(directory, 'simulated-%s.yaml' % name)
        with open(path, 'w') as fleet_file:
            yaml.safe_dump(fleet, fleet_file)
        reports.append(bench_fleet.host_inventory(path, host))
    return reports


def tcp_sockets(port):
    """{socket inode} of the established TCP connections to ``port``."""
    inodes = set()
    for table in ('/proc/net/tcp', '/proc/net/tcp6'):
        try:
            with open(table) as lines:
                next(lines)
                for line in lines:
                    fields = line.split()
                    remote_port = int(fields[2].rsplit(':', 1)[1], 16)
                    if remote_port == port and fields[3] == '01':
                        inodes.add(fields[9])
        except OSError:
            pass
    return inodes


def process_group(leader):
    """The pids of ``leader``'s process group (a launcher's workers too)."""
    pids = []
    for name in os.listdir('/proc'):
        if name.isdigit():
            try:
                if os.getpgid(int(name)) == leader:
                    pids.append(int(name))
            except ProcessLookupError:
                pass
    return pids


def sample_process(leader, db_port):
    """Threads, RSS (MiB), fds and DB connections of a process group."""
    db_sockets = tcp_sockets(db_port) if db_port else set()
    totals = {'threads': 0, 'rss_mib': 0.0, 'fds': 0, 'db_connections': 0}
    for pid in process_group(leader):
        try:
            with open('/proc/%d/status' % pid) as status:
                for line in status:
                    name, _, value = line.partition(':')
                    if name == 'Threads':
                        totals['threads'] += int(value)
                    elif name == 'VmRSS':
                        totals['rss_mib'] += int(value.split()[0]) / 1024
            fds = os.listdir('/proc/%d/fd' % pid)
        except (FileNotFoundError, ProcessLookupError):
            continue
        targets = []
        for fd in fds:
            try:
                targets.append(os.readlink('/proc/%d/fd/%s' % (pid, fd)))
            except FileNotFoundError:
                pass  # closed since the listing
        totals['fds'] += len(targets)
        totals['db_connections'] += sum(
            1 for target in targets if target.startswith('socket:[')
            and target[len('socket:['):-1] in db_sockets)
    if not db_port:
        totals['db_connections'] = None
    return totals


class Deployment:
    """Services of one target, RabbitMQ vhost, temp directory, database."""

    def __init__(self, target, arguments, conductor_options=None):
        self.target = target
        self.arguments = arguments
        # More configuration groups of the conductor (or the all-in-one),
        # e.g. [nova] for arq_bind.py --latency.
        self.conductor_options = conductor_options or {}
        self.run = uuid.uuid4().hex[:8]
        self.directory = tempfile.mkdtemp(prefix='cyborg-soak-%s-' % target)
        self.agent_host = 'soak-%s-%s' % (target, self.run)
        self.api_port = processes.free_port()
        self.services = {}
        self.db_name = None
        self.db_port = None
        self._fixtures = []
        self._placement = None

    def _use(self, fixture):
        fixture.setUp()
        self._fixtures.append(fixture)
        return fixture

    def start(self):
        self.rabbit = self._use(messaging.RabbitIsolation())
        self.fleet_path = os.path.join(self.directory, 'fleet.yaml')
        write_fleet(self.fleet_path, self.arguments.clients)
        common = {'transport_url': self.rabbit.transport_url,
                  'control_exchange': self.rabbit.control_exchange}
        if self.target == 'aio':
            self._start_aio(common)
        else:
            self._start_processes(common)

    def _start_aio(self, common):
        state_dir = os.path.join(self.directory, 'state')
        os.environ['CYBORG_AIO_STATE_DIR'] = state_dir
        placement_port = processes.free_port()
        self.placement_url = 'http://127.0.0.1:%d' % placement_port
        self.services['cyborg-aio'] = self._use(processes.ServiceProcess(
            'cyborg-aio', dict(self.conductor_options, **{
                'DEFAULT': dict(common, host=self.agent_host),
                'api': {'host_ip': '127.0.0.1', 'port': self.api_port,
                        'fleet_page_port': processes.free_port()},
                'aio': {'state_dir': state_dir,
                        'placement_port': placement_port,
                        'embedded_glance': 'false'},
                'agent': {'fake_inventory': self.fleet_path}})))

    def _start_processes(self, common):
        self.db_name = 'cyborg_soak_%s' % self.run
        self.admin_engine = sa.create_engine(
            MARIADB_URL, isolation_level='AUTOCOMMIT',
            poolclass=sa.pool.NullPool)
        self.db_port = self.admin_engine.url.port or 3306
        with self.admin_engine.connect() as connection:
            connection.execute(sa.text(
                'CREATE DATABASE %s CHARACTER SET utf8mb4' % self.db_name))
        database = {'connection': MARIADB_URL + self.db_name}
        self._placement = aio_placement.EmbeddedPlacement(
            self.directory, port=0)
        self.placement_url = self._placement.start()
        placement = {'auth_type': 'admin_token',
                     'endpoint': self.placement_url, 'token': 'admin'}
        config_path = os.path.join(self.directory, 'dbsync.conf')
        processes.write_config(config_path, {'database': database})
        subprocess.run([processes.console_script('cyborg-dbsync'),
                        '--config-file', config_path, 'upgrade'],
                       check=True, capture_output=True)
        # Nova's job in a cloud: the compute node the devices hang below.
        self._placement_client().ensure_provider(self.agent_host)
        conductor_host = 'soak-conductor-' + self.run
        for script, options in (
                ('cyborg-conductor', dict(self.conductor_options, **{
                    'DEFAULT': dict(common, host=conductor_host),
                    'database': database, 'placement': placement})),
                ('cyborg-api', {'DEFAULT': dict(
                    common, host='soak-api-' + self.run,
                    auth_strategy='noauth'), 'database': database,
                    'api': {'host_ip': '127.0.0.1', 'port': self.api_port}}),
                ('cyborg-agent', {'DEFAULT': dict(common,
                                                  host=self.agent_host),
                                  'agent': {'enabled_drivers': 'fake_driver',
                                            'fake_inventory':
                                            self.fleet_path}})):
            if script == 'cyborg-agent':
                # Once the conductor consumes its topic, so that the
                # agent's first report is not lost.
                processes.wait_until(
                    lambda: self._heartbeat(conductor_host),
                    'the conductor heartbeat', list(self.services.values()),
                    timeout=START_TIMEOUT)
            self.services[script] = self._use(
                processes.ServiceProcess(script, options))

    def _heartbeat(self, host):
        with self.admin_engine.connect() as connection:
            services = sa.table('services', sa.column('host'),
                                schema=self.db_name)
            return connection.execute(sa.select(sa.func.count()).select_from(
                services).where(services.c.host == host)).scalar()

    def _placement_client(self):
        placement_client.register_token_endpoint_opts(conf.CONF)
        for name, value in (('auth_type', 'admin_token'),
                            ('endpoint', self.placement_url),
                            ('token', 'admin')):
            conf.CONF.set_override(name, value, group='placement')
        return placement_client.PlacementClient(conf.CONF)

    def wait_for_regions(self, api):
        """The rp uuids of the real agent's FPGA regions, once all exist."""
        services = list(self.services.values())

        def regions():
            try:
                found = [rp for rp, (host, _) in bench_api.fpga_regions(
                    api).items() if host == self.agent_host]
            except (RuntimeError, requests.RequestException, ValueError):
                return None
            return sorted(found) if len(found) == self.arguments.clients \
                else None

        return processes.wait_until(regions, 'the agent\'s FPGA regions',
                                    services, timeout=START_TIMEOUT,
                                    interval=1)

    def connect_rpc(self, simulated_hosts):
        """RPC to this deployment's conductor; compute nodes of the hosts."""
        self._messaging = bench_messaging.RabbitRPC(self.rabbit)
        self._messaging.start()
        client = self._placement_client()
        for host in simulated_hosts:
            client.ensure_provider(host)

    def db_total(self):
        """The database server's count of connections to the soak database."""
        if not self.db_name:
            return None
        with self.admin_engine.connect() as connection:
            return connection.execute(sa.text(
                'SELECT COUNT(*) FROM information_schema.processlist '
                'WHERE db = :db'), {'db': self.db_name}).scalar()

    def dead_services(self):
        return [name for name, service in self.services.items()
                if not service.is_running()]

    def stop(self):
        if getattr(self, '_messaging', None):
            self._messaging.stop()
        while self._fixtures:
            fixture = self._fixtures.pop()
            fixture.cleanUp()
            if self.arguments.keep_logs and isinstance(
                    fixture, processes.ServiceProcess):
                # The log's directory went at cleanup; its text was kept.
                with open(os.path.join(self.directory, '%s.log'
                                       % fixture.script), 'w') as log_file:
                    log_file.write(fixture.log())
        if self._placement:
            self._placement.stop()
        if self.db_name:
            with self.admin_engine.connect() as connection:
                connection.execute(sa.text('DROP DATABASE IF EXISTS %s'
                                           % self.db_name))
            self.admin_engine.dispose()
        os.environ.pop('CYBORG_AIO_STATE_DIR', None)
        if self.arguments.keep_logs:
            print('logs kept in %s' % self.directory)
        else:
            shutil.rmtree(self.directory, ignore_errors=True)
