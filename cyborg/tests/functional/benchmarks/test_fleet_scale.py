"""benchmarks/fleet_scale.py still runs: its --quick mode, on SQLite.

The script runs as a process of its own, as an operator runs it. Nothing
here asserts a time; the tests check that every figure is printed and
that the counts of an unchanged report are those the conductor promises:
one SQL statement, no Placement request (cyborg.conductor.report_digest).
"""

from cyborg.tests.functional.benchmarks import benchmark_runner

NUMBER = benchmark_runner.NUMBER
REPORT = (r'n=(%s)\s+median=\s*(%s) ms\s+p95=\s*(%s) ms\s+cpu=\s*(%s) ms\s+'
          r'SQL=([0-9]+)\s+Placement=([0-9]+)\s+rate=\s*(%s)/s'
          % ((NUMBER,) * 5))
PAGE = r'median=\s*(%s) ms\s+p95=\s*(%s) ms\s+([0-9]+) bytes' % (NUMBER,
                                                                  NUMBER)
CONDUCTORS = (r'(%s) reports/s x\s+(%s) ms CPU =\s+(%s) cores: ([0-9]+) '
              r'conductor' % ((NUMBER,) * 3))


class TestFleetScaleBenchmark(benchmark_runner.BenchmarkTestCase):

    script = 'fleet_scale.py'
    timeout = 300

    def test_quick_mode_prints_every_figure(self):
        # The second size is grown by seeding the database, as a run at
        # 10,000 hosts is: its unchanged reports must be skipped all the
        # same (they name hosts the conductor never saw a report of).
        output = self.run_script('--seed-from', '30')
        self.assertIn('fleet scale: sizes 10,30, 8 GPUs a host, database '
                      'sqlite', output)
        sections = output.split('--- ')[1:]
        self.assertEqual(2, len(sections))
        for section, (size, new) in zip(sections, ((10, 10), (30, 20)),
                                        strict=True):
            self.assertTrue(section.startswith(
                '%d hosts x 8 devices (%d devices)' % (size, size * 8)))
            if size < 30:
                first = self.line(section, 'first report (%d new hosts)'
                                  % new, REPORT)
                self.assertEqual(str(new), first[0])
                self.assertGreater(int(first[5]), 8)
            else:
                seeded = self.line(section, 'first reports seeded in the '
                                   'database', r'([0-9]+) hosts')
                self.assertEqual(str(new), seeded[0])
            unchanged = self.line(section, 'unchanged report', REPORT)
            self.assertEqual((str(size), '1', '0'),
                             (unchanged[0],) + unchanged[4:6])
            for label in ('changed report',
                          'unchanged report past the resync interval'):
                applied = self.line(section, label, REPORT)
                self.assertEqual('5', applied[0])
                self.assertGreater(int(applied[4]), 1)
                self.assertGreater(int(applied[5]), 0)
            self.line(section, 'floor: one RPC call and one primary-key '
                      'SELECT', r'median=\s*(%s) ms' % NUMBER)
            needed = self.line(section, 'conductors, 10000 hosts '
                               '(projected)', CONDUCTORS)
            self.assertEqual('166.7', needed[0])
            self.assertGreaterEqual(int(needed[3]), 1)
            for label in ('GET /v2/devices (default page)',
                          'GET /v2/devices?limit=100',
                          'GET /v2/fleet (JSON, first page)',
                          'GET /v2/fleet?host=<one host>'):
                self.line(section, label, PAGE)
            self.line(section, 'database size', r'(%s) MiB' % NUMBER)
