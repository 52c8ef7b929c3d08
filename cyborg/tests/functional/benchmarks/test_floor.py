"""benchmarks/floor.py still runs: its --quick mode on SQLite.

Nothing here asserts a time: the test checks that each list is measured
through the API, next to its floor, with the SQL statements of one page.
"""

from cyborg.tests.functional.benchmarks import benchmark_runner

NUMBER = benchmark_runner.NUMBER
LISTS = ('devices', 'deployables', 'attributes', 'accelerator_requests',
         'device_profiles')
# API µs/row (CPU), floor µs/row (CPU), ratio, ratio of CPU, limit=1 ms
# (CPU), statements.
_PAIR = r'(%s) \(\s*(%s)\)' % (NUMBER, NUMBER)
ROW = r'pysqlite\s+orjson\s+%s +%s +(%s)x +(%s)x +%s +([0-9]+)$' % (
    _PAIR, _PAIR, NUMBER, NUMBER, _PAIR)


class TestFloorBenchmark(benchmark_runner.BenchmarkTestCase):

    script = 'floor.py'
    timeout = 240

    def test_quick_run_on_sqlite(self):
        output = self.run_script('--database', 'sqlite')
        self.assertIn('floor benchmark: 50 rows a page, 3 calls each',
                      output)
        self.line(output, 'placement GET /resource_providers?name=X (1 row):',
                  '(%s) ms' % NUMBER)
        for name in LISTS:
            values = self.line(output, name, ROW)
            self.assertGreater(float(values[0]), 0)
            self.assertGreater(float(values[2]), 0)
            # One page is one or two statements, whatever its size.
            self.assertIn(int(values[8]), (1, 2))
