"""Where a lost database is met on no request's path: the bind sweep, the
history pruner and the heartbeat skip or stay silent while
``cyborg.db.api.OUTAGE`` logs the outage once, without a traceback."""

import logging
import threading
import types

import fixtures

from cyborg import exception
from cyborg import service
from cyborg.conductor import bind_sweep
from cyborg.conductor import history
from cyborg.db import api as db_api
from cyborg.tests import base


def _lost():
    return exception.DatabaseUnavailable(reason='OperationalError 2003')


class OutagePlacesTests(base.TestCase):

    def setUp(self):
        super().setUp()
        self.log = self.useFixture(fixtures.FakeLogger(level=logging.INFO))
        self.stop = threading.Event()

    def _until(self, calls, count):
        """A side effect recording its calls, setting ``stop`` at ``count``."""
        def record(*args, **kwargs):
            calls.append(args or kwargs)
            if len(calls) >= count:
                self.stop.set()
        return record

    def _warnings(self):
        return [line for line in self.log.output.splitlines()
                if 'outage' in line.lower() or 'failed' in line]

    def test_the_sweep_is_silent_on_a_lost_database_and_skips_meanwhile(self):
        binder = types.SimpleNamespace(
            settings=types.SimpleNamespace(sweep_interval=0.01))
        sweeper = bind_sweep.Sweeper(binder)
        calls = []

        def sweep(initial=False):
            calls.append(initial)
            if len(calls) == 1:
                error = _lost()
                db_api.OUTAGE.failed(error)
                raise error
            if len(calls) == 3:
                self.stop.set()

        sweeper.sweep = sweep
        skipped = threading.Event()
        original_wait = self.stop.wait

        def wait(timeout):
            # One round with the outage still on: no sweep then.
            if len(calls) == 1 and not skipped.is_set():
                skipped.set()
                return original_wait(timeout)
            db_api.OUTAGE.answered()
            return original_wait(timeout)

        self.stop.wait = wait
        sweeper.run(self.stop)
        # The initial sweep failed: the next one is the initial one again.
        self.assertEqual([True, True, False], calls)
        self.assertTrue(skipped.is_set())
        self.assertNotIn('Traceback', self.log.output)
        self.assertNotIn('Sweep of the recorded binds failed',
                         self.log.output)
        self.assertEqual(2, len(self._warnings()), self.log.output)

    def test_the_pruner_skips_while_the_database_is_out(self):
        pruner = history.Pruner(None, history.PruneSettings(
            retention_days=1, interval=0.01, batch_size=10))
        calls = []
        db_api.OUTAGE.failed(_lost())
        pruner.prune = self._until(calls, 1)
        pruner._stop = self.stop
        thread = threading.Thread(target=pruner._run)
        thread.start()
        self.assertFalse(self.stop.wait(0.1))
        self.assertEqual([], calls)
        db_api.OUTAGE.answered()
        thread.join(5)
        self.assertEqual(1, len(calls))

    def test_the_pruner_is_silent_on_a_lost_database(self):
        pruner = history.Pruner(None, history.PruneSettings(
            retention_days=1, interval=0.01, batch_size=10))
        calls = []

        def prune():
            calls.append(1)
            if len(calls) == 2:
                pruner._stop.set()
            raise _lost()

        pruner.prune = prune
        pruner._run()
        self.assertEqual(2, len(calls))
        self.assertNotIn('Pruning the history failed', self.log.output)
        self.assertNotIn('Traceback', self.log.output)

    def test_a_heartbeat_told_of_a_lost_database_counts_it(self):
        # An agent's: the conductor answered DatabaseUnavailable.
        errors = [_lost(), _lost(), None]

        def heartbeat(context):
            error = errors.pop(0)
            if error is not None:
                raise error

        rpc_service = service.RPCService(object(), 'cyborg-agent', 'host-1',
                                         heartbeat)
        for _ in range(3):
            rpc_service._send_heartbeat()
        self.assertFalse(db_api.OUTAGE.ongoing)
        self.assertNotIn('Heartbeat of', self.log.output)
        warnings = self._warnings()
        self.assertEqual(2, len(warnings), self.log.output)
        self.assertIn('Outage of the database', warnings[0])
        self.assertIn('2 tries failed', warnings[1])
