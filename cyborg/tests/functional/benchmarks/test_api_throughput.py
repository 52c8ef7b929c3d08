"""benchmarks/api_throughput.py still runs: its --quick mode on SQLite.

The script starts cyborg-api and gunicorn itself. Nothing here asserts a
rate; the test checks that each server answered every request and that
its numbers are printed.
"""

from cyborg.tests.functional.benchmarks import benchmark_runner

NUMBER = benchmark_runner.NUMBER


class TestApiThroughputBenchmark(benchmark_runner.BenchmarkTestCase):

    script = 'api_throughput.py'
    timeout = 240

    def test_quick_mode_measures_each_server_without_errors(self):
        output = self.run_script('--database-url', 'sqlite')
        self.assertIn('GET /v2/devices?limit=100, 4 clients in 2 processes',
                      output)
        for label in ('cyborg-api (cheroot, 1 process)',
                      'gunicorn sync,', 'gunicorn gthread,'):
            rate, median, p95, errors = self.line(
                output, label, r'.*?(%s) req/s\s+median\s+(%s) ms\s+p95\s+'
                r'(%s) ms\s+errors ([0-9]+)' % (NUMBER, NUMBER, NUMBER))
            self.assertGreater(float(rate), 0)
            self.assertLessEqual(float(median), float(p95))
            self.assertEqual('0', errors)
