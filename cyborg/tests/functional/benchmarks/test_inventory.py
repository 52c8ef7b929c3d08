"""benchmarks/inventory.py still runs: its --quick mode, on each database.

The script runs as a process of its own, as an operator runs it (it sets
process-wide state: Placement's engine facade, the RPC transport). Nothing
here asserts a time; the tests check that every number is printed and that
the counts match the simulated fleet.
"""

import uuid

import sqlalchemy as sa

from cyborg.tests.fixtures import database
from cyborg.tests.fixtures import messaging
from cyborg.tests.functional.benchmarks import benchmark_runner

NUMBER = benchmark_runner.NUMBER
TIMING = r'n=%%d\s+median=\s*(%s) ms\s+p95=\s*(%s) ms' % (NUMBER, NUMBER)
COUNT = r'n=%d\s+median=\s*([0-9]+)\s+max=\s*([0-9]+)'


class TestInventoryBenchmark(benchmark_runner.BenchmarkTestCase):

    script = 'inventory.py'
    timeout = 120

    def _assert_report(self, output, backend):
        # --quick: 5 hosts x 2 FPGAs x 2 VFs; 5 requests per listing.
        self.assertIn('fleet: 5 hosts x 2 FPGAs x 2 VFs, database %s'
                      % backend, output)
        self.line(output, 'fake driver discovery per host', TIMING % 5)
        for kind in ('first', 'unchanged'):
            median, p95 = self.line(
                output, '%s report per host' % kind,
                TIMING % 5 + r'\s+total=\s*(%s) s' % NUMBER)[:2]
            self.assertLessEqual(float(median), float(p95))
            statements = self.line(
                output, '  SQL statements per %s report' % kind, COUNT % 5)
            self.assertGreater(int(statements[0]), 0)
            self.line(output, '  Placement requests per %s report' % kind,
                      COUNT % 5)
        # Each FPGA is a device: a root, a region, the region's PF and its
        # two VFs.
        self.line(output, 'GET /v2/devices (default page, 10 rows)',
                  TIMING % 5)
        self.line(output, 'GET /v2/deployables (default page, 50 rows)',
                  TIMING % 5)
        for resource, rows in (('devices', 10), ('deployables', 50)):
            self.line(output, 'GET /v2/%s?limit=100' % resource, TIMING % 5)
            self.line(output, 'all /v2/%s, 1 pages, %d rows'
                      % (resource, rows), TIMING % 5)

    def test_quick_mode_on_sqlite_prints_every_number(self):
        self._assert_report(self.run_script(), 'sqlite')

    def _test_server_backend(self, backend):
        database.backend_available(backend)
        name = 'cyborg_bench_test_%s' % uuid.uuid4().hex[:12]
        url = sa.engine.make_url(database.server_url(backend)).set(
            database=name).render_as_string(hide_password=False)
        self._assert_report(self.run_script('--database-url', url), backend)
        # The database the script made is gone again.
        self.assertNotIn(name, self._databases(backend))

    def _databases(self, backend):
        query = ('SHOW DATABASES' if backend == 'mysql'
                 else 'SELECT datname FROM pg_database')
        engine = sa.create_engine(database.server_url(backend),
                                  poolclass=sa.pool.NullPool)
        try:
            with engine.connect() as connection:
                return {row[0] for row in connection.execute(sa.text(query))}
        finally:
            engine.dispose()

    def test_quick_mode_on_mysql_creates_and_drops_its_database(self):
        self._test_server_backend('mysql')

    def test_quick_mode_on_postgresql_creates_and_drops_its_database(self):
        self._test_server_backend('postgresql')

    def test_fleet_reports_mode_on_mysql_with_two_conductors(self):
        database.backend_available('mysql')
        messaging.require_rabbit()
        name = 'cyborg_bench_test_%s' % uuid.uuid4().hex[:12]
        url = sa.engine.make_url(database.server_url('mysql')).set(
            database=name).render_as_string(hide_password=False)

        output = self.run_script('--fleet-reports', '--database-url', url)

        # --quick: a big host of 20 GPUs, 5 hosts x 2 FPGAs x 2 VFs.
        report = r'(%s) ms\s+SQL statements ([0-9]+)\s+Placement requests ' \
                 r'([0-9]+)' % NUMBER
        first = self.line(output, 'first report, 1 host of 20 GPUs', report)
        unchanged = self.line(output, 'unchanged report, 1 host of 20 GPUs',
                              report)
        # An unchanged report costs one statement and no Placement request,
        # whatever the host's size (cyborg.conductor.report_digest).
        self.assertEqual(('1', '0'), unchanged[1:])
        self.assertGreater(int(first[2]), 20)
        self.assertEqual(('1', '1'), self.line(
            output, '  SQL statements per unchanged report', COUNT % 5))
        self.assertEqual(('0', '0'), self.line(
            output, '  Placement requests per unchanged report', COUNT % 5))
        for conductors in ('1 conductor', '2 conductors'):
            rate = self.line(output, '5 unchanged reports, %s' % conductors,
                             r'(%s) reports/s' % NUMBER)[0]
            self.assertGreater(float(rate), 0)
        self.assertNotIn(name, self._databases('mysql'))
