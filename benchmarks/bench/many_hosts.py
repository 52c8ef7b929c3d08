"""Many simulated hosts reporting from one process (issue 33, point 5).

``SimulatedHosts`` is the fake agent of N hosts: distinct host names
(``<prefix>-00001`` ...), each with its own devices from one fake-driver
fleet file (``bench.fleet.host_inventory``: what the fake driver of that
host reports, its model naming the host), its own compute-node provider
in Placement (``register``, Nova's job, made before its first report),
and its reports sent through ``ConductorAPI.report_inventory``: through
the in-process conductor of ``bench.fleet.Fleet`` (local dispatch) or to
conductor processes over RabbitMQ (``bench.fleet_reports.Conductors``).
It counts what each report cost: wall and CPU time of this process, SQL
statements of this process's engine (the in-process conductor's) and
Placement requests (``Fleet.placement_requests``).
"""

import dataclasses
import statistics
import time

from cyborg.clients import placement as placement_client
from cyborg.conductor import inventory_report
from cyborg.conductor import report_digest
from cyborg import conf
from cyborg import context as cyborg_context
from cyborg.db import api as db_api
from cyborg.db.queries import host_locks

import bench
from bench import fleet as bench_fleet

REPORT_TIMEOUT = 120


@dataclasses.dataclass
class Costs:
    """What a series of reports cost, one entry per report."""

    wall: list = dataclasses.field(default_factory=list)
    cpu: list = dataclasses.field(default_factory=list)
    statements: list = dataclasses.field(default_factory=list)
    requests: list = dataclasses.field(default_factory=list)
    elapsed: float = 0.0

    def line(self, name):
        """One line: median and p95 wall time, median CPU, statements and
        Placement requests per report, and reports per second."""
        return ('%-44s n=%-6d median=%8.2f ms  p95=%8.2f ms  cpu=%7.2f ms  '
                'SQL=%-3d Placement=%-3d rate=%8.1f/s' % (
                    name, len(self.wall), statistics.median(self.wall) * 1000,
                    bench.percentile(self.wall, 0.95) * 1000,
                    statistics.median(self.cpu) * 1000,
                    statistics.median(self.statements),
                    statistics.median(self.requests),
                    len(self.wall) / self.elapsed if self.elapsed else 0))


class SimulatedHosts:
    """``count`` hosts reporting the devices of ``fleet_path`` each."""

    def __init__(self, fleet, fleet_path, prefix='sim'):
        self.fleet = fleet
        self.fleet_path = fleet_path
        self.prefix = prefix
        self.hosts = []
        self.inventories = {}

    def grow(self, count):
        """Add hosts up to ``count``; return the new names."""
        new = ['%s-%05d' % (self.prefix, index)
               for index in range(len(self.hosts) + 1, count + 1)]
        for host in new:
            self.inventories[host] = bench_fleet.host_inventory(
                self.fleet_path, host)
        self.hosts.extend(new)
        return new

    def register(self, hosts):
        """Make the hosts' compute-node providers (untimed: Nova's job)."""
        placement = placement_client.PlacementClient(conf.CONF)
        for host in hosts:
            placement.ensure_provider(host)

    def seed(self, hosts):
        """Write the hosts' first reports to the database alone, as the
        in-process conductor would have left them after applying them and
        syncing Placement, without the Placement sync (untimed).

        A fleet of 10,000 hosts grown by real first reports takes hours on
        a small machine, nearly all of it Placement creating providers;
        what is measured at that size (unchanged reports, the lists, the
        fleet page, the database) reads no Placement. The conductor
        remembers the seeded hosts as synced, so their next unchanged
        report is skipped as a synced host's is. The cost of a first
        report is measured at the sizes grown by real reports.
        """
        context = cyborg_context.get_admin_context()
        settings = report_digest.ReportSettings.from_conf(conf.CONF)
        placement = self.fleet.conductor.placement
        for host in hosts:
            devices = self.inventories[host]
            stored = inventory_report.apply(
                context, host, devices, settings.recovery_reports,
                digest=report_digest.digest(devices))
            host_locks.mark_synced(context, host, stored,
                                   report_digest.utcnow())
            report_digest.remember_synced(placement, host)

    def report(self, hosts, client=None, change=None):
        """Send each host's report, one at a time; return the Costs.

        ``change(devices)`` returns the devices to send instead (a
        changed report); ``client``: the in-process conductor's by default.
        """
        client = client or self.fleet.client
        context = cyborg_context.get_admin_context()
        engine = db_api.get_engine()
        costs = Costs()
        started = time.perf_counter()
        for host in hosts:
            devices = self.inventories[host]
            if change is not None:
                devices = change(devices)
            before = self.fleet.placement_requests.count
            with bench_fleet.StatementCounter(engine) as counter:
                cpu, wall = time.process_time(), time.perf_counter()
                client.report_inventory(context, host, devices,
                                        timeout=REPORT_TIMEOUT)
                costs.wall.append(time.perf_counter() - wall)
                costs.cpu.append(time.process_time() - cpu)
            costs.statements.append(counter.count)
            costs.requests.append(
                self.fleet.placement_requests.count - before)
        costs.elapsed = time.perf_counter() - started
        return costs
