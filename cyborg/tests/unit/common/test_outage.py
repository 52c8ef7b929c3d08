"""cyborg.common.outage: one warning as an outage starts, one as it ends."""

import logging

import fixtures

from cyborg.common import outage
from cyborg.tests import base


class Clock:

    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class TestOutage(base.TestCase):

    def setUp(self):
        super().setUp()
        self.log = self.useFixture(fixtures.FakeLogger(
            name=outage.__name__, level=logging.DEBUG))
        self.clock = Clock()
        self.outage = outage.Outage('the database', clock=self.clock)
        self.heard = []
        self.outage.listen(self.heard.append)

    def _lines(self):
        return self.log.output.splitlines()

    def test_one_warning_at_the_start_and_one_at_the_end(self):
        self.assertFalse(self.outage.answered())
        self.assertEqual([], self._lines())

        self.assertTrue(self.outage.failed(RuntimeError('refused')))
        self.assertTrue(self.outage.ongoing)
        for _ in range(41):
            self.clock.now += 1.5
            self.assertFalse(self.outage.failed(RuntimeError('refused')))
        self.assertEqual(
            ['Outage of the database: refused. Tries are counted, not '
             'logged, until it answers again.'], self._lines())

        self.assertTrue(self.outage.answered())
        self.assertFalse(self.outage.ongoing)
        self.assertFalse(self.outage.answered())
        self.assertEqual(
            'End of the outage of the database after 61.5 s; 42 tries '
            'failed meanwhile.', self._lines()[-1])
        self.assertEqual(2, len(self._lines()))
        self.assertNotIn('Traceback', self.log.output)
        self.assertEqual([True, False], self.heard)

    def test_the_next_outage_counts_from_zero(self):
        self.outage.failed(RuntimeError('first'))
        self.outage.failed(RuntimeError('first'))
        self.outage.answered()
        self.outage.failed(RuntimeError('second'))
        self.clock.now += 2
        self.outage.answered()
        self.assertEqual('End of the outage of the database after 2.0 s; '
                         '1 try failed meanwhile.', self._lines()[-1])
        self.assertEqual(4, len(self._lines()))
        self.assertEqual([True, False, True, False], self.heard)

    def test_a_remote_traceback_is_left_out(self):
        self.outage.failed(RuntimeError(
            'The database is unavailable\nTraceback (most recent call '
            'last):\n  File "x.py"'))
        self.assertEqual(
            ['Outage of the database: The database is unavailable. Tries '
             'are counted, not logged, until it answers again.'],
            self._lines())

    def test_an_error_seen_by_several_places_counts_once(self):
        error = RuntimeError('refused')
        self.outage.failed(error)
        self.outage.failed(error)
        self.outage.failed(RuntimeError('again'))
        self.outage.answered()
        self.assertIn('2 tries failed', self._lines()[-1])
