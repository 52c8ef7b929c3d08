"""benchmarks/arq_bind.py still runs: its --quick mode against its own cyborg-aio.

The script runs as a process of its own, as an operator runs it, and starts
a ``cyborg-aio`` of its own. Nothing here asserts a time; the test checks
that every number is printed, that every ARQ was Bound and that the cleanup
left none behind.
"""

from cyborg.tests.fixtures import database
from cyborg.tests.fixtures import messaging
from cyborg.tests.functional.benchmarks import benchmark_runner

NUMBER = benchmark_runner.NUMBER
TIMING = (r'n=%%d\s+median=\s*(%s) ms\s+p95=\s*(%s) ms\s+max=\s*(%s) ms'
          % (NUMBER, NUMBER, NUMBER))
# --quick: 6 instances x 2 ARQs, 3 at a time.
INSTANCES = 6
ARQS = 12


class TestArqBindBenchmark(benchmark_runner.BenchmarkTestCase):

    script = 'arq_bind.py'
    timeout = 240

    def _timing(self, output, label):
        median, p95, maximum = (float(value) for value in self.line(
            output, label, TIMING % INSTANCES))
        self.assertLessEqual(median, p95)
        self.assertLessEqual(p95, maximum)
        self.assertGreater(median, 0)

    def test_quick_mode_binds_every_arq_and_prints_every_number(self):
        output = self.run_script()
        self.assertRegex(output, r'deployment: cyborg-aio started by the '
                                 r'script, 2 FPGA regions x 8 handles')
        self.assertIn('instances: 6 x 2 ARQs, concurrency 3, 2 FPGA regions '
                      'used', output)
        for label in ('POST /v2/accelerator_requests',
                      'bind latency (PATCH to resolved)',
                      'create and bind (POST to resolved)',
                      'DELETE ?instance= (sequential)'):
            self._timing(output, label)
        instances_per_second, arqs_per_second, arqs = self.line(
            output, 'throughput', r'(%s) instances/s\s+(%s) ARQs/s\s+'
            r'\(([0-9]+) ARQs in %s s\)' % (NUMBER, NUMBER, NUMBER))
        self.assertEqual(ARQS, int(arqs))
        self.assertAlmostEqual(2 * float(instances_per_second),
                               float(arqs_per_second), delta=0.02)
        self.assertEqual(
            (str(ARQS), '0', '0', '0'),
            self.line(output, 'ARQ states', r'Bound=([0-9]+) '
                      r'BindFailed=([0-9]+) other=([0-9]+) '
                      r'unresolved=([0-9]+)'))
        self.assertEqual(('0',), self.line(
            output, 'instances with a failed request', r'([0-9]+)$'))
        self.assertEqual(('0',), self.line(
            output, 'ARQs left after cleanup', r'([0-9]+)$'))

    def test_latency_mode_prints_the_bind_next_to_the_agent_call(self):
        # The all-in-one with [nova] at the script's stand-in: 3 binds of
        # one ARQ, each told to Nova in one request.
        output = self.run_script('--latency', '--target', 'aio',
                                 '--with-nova')
        self.assertIn('aio with [nova]: ready in', output)
        latency = r'n=%d\s+median=\s*(%s) ms\s+p95=\s*(%s) ms'
        for label, count in (
                ('PATCH (202 received)', 3),
                ('PATCH -> Bound (first GET answering 200)', 3),
                ('agent prepare_arqs over RabbitMQ', 3),
                ('agent prepare_arqs, local dispatch', 3),
                ('PATCH -> Nova event received', 3)):
            median, p95 = (float(value) for value in self.line(
                output, label, latency % (count, NUMBER, NUMBER)))
            self.assertLessEqual(median, p95)
            self.assertGreater(median, 0)
        self.assertEqual(('1',), self.line(
            output, 'event requests per instance', r'([0-9, ]+)$'))
        self.line(output, 'ratio PATCH -> Bound / agent call',
                  r'median (%s)x\s+p95 (%s)x' % (NUMBER, NUMBER))
        # The all-in-one is one service: its CPU per bind, workers included.
        [cpu] = self.line(output, 'CPU ms per bind (POST to DELETE)',
                          r'cyborg-aio (%s)$' % NUMBER)
        self.assertGreater(float(cpu), 0)

    def test_latency_mode_on_processes_prints_the_path_floor(self):
        # cyborg-api, -conductor and -agent over RabbitMQ on MariaDB: the
        # round trips a bind cannot do without, timed alone, and their sums.
        database.backend_available('mysql')
        messaging.require_rabbit()
        output = self.run_script('--latency', '--target', 'processes')
        latency = r'n=3\s+median=\s*(%s) ms\s+p95=\s*(%s) ms' % (NUMBER,
                                                                 NUMBER)
        parts = {}
        for name, label in (
                ('agent', 'agent prepare_arqs over RabbitMQ'),
                ('http', 'HTTP round trip (GET /)'),
                ('conductor', 'conductor call (ping) over RabbitMQ'),
                ('commit', 'commit of one changed row, MariaDB'),
                ('statement', 'one primary-key read, MariaDB')):
            median, p95 = (float(value) for value in self.line(
                output, label, latency))
            self.assertLessEqual(median, p95)
            self.assertGreater(median, 0)
            parts[name] = median
        [round_trips] = self.line(
            output, 'path floor, round trips (medians)', r'(%s) ms' % NUMBER)
        [with_statements] = self.line(
            output, 'path floor with statements and the GET',
            r'(%s) ms' % NUMBER)
        # Sums of the printed medians (each rounded to 0.01 ms).
        self.assertAlmostEqual(
            parts['http'] + parts['conductor'] + parts['agent']
            + 2 * parts['commit'], float(round_trips), delta=0.03)
        self.assertAlmostEqual(
            float(round_trips) + parts['http'] + 6 * parts['statement'],
            float(with_statements), delta=0.05)
        floor_ratio, with_ratio = (float(value) for value in self.line(
            output, 'ratio path floor / agent call',
            r'(%s)x, (%s)x with statements' % (NUMBER, NUMBER)))
        self.assertAlmostEqual(float(round_trips) / parts['agent'],
                               floor_ratio, delta=0.1)
        self.assertGreater(with_ratio, floor_ratio)
        self.line(output, 'ratio PATCH -> Bound / path floor',
                  r'(%s)x' % NUMBER)
