"""benchmarks/bitstream_cache.py still runs: its --quick mode against its
own cyborg-aio.

Nothing here asserts a time; the test checks that every number is
printed, that the warm bind was served by the agent's cache and that
every ARQ was Bound.
"""

from cyborg.tests.functional.benchmarks import benchmark_runner

NUMBER = benchmark_runner.NUMBER


class TestBitstreamCacheBenchmark(benchmark_runner.BenchmarkTestCase):

    script = 'bitstream_cache.py'
    timeout = 240

    def test_quick_mode_prints_both_binds_and_the_ratio(self):
        output = self.run_script()
        self.assertIn('deployment: cyborg-aio started by the script, 2 FPGA '
                      'regions of one host, bitstreams of 4 MiB', output)
        cold, warm = (float(value) for value in self.line(
            output, 'round 1', r'cold bind\s+(%s) ms\s+warm bind\s+(%s) ms'
            % (NUMBER, NUMBER)))
        self.assertGreater(cold, 0)
        self.assertGreater(warm, 0)
        for label in ('median bind, download (cold)',
                      'median bind, from the cache (warm)'):
            self.line(output, label, r'(%s) ms' % NUMBER)
        self.line(output, 'ratio cold / warm', '(%s)' % NUMBER)
        self.assertEqual(('1', '1'), self.line(
            output, 'warm binds served by the cache', r'(\d+) of (\d+)'))
        self.assertEqual(('2', '2'), self.line(
            output, 'ARQs Bound', r'(\d+) of (\d+)'))
