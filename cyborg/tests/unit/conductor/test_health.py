"""cyborg.conductor.health: what a reported health does, and a clear.

The rule itself (``decide``), then reports applied on SQLite: a degraded
device recovers after ``recovery_reports`` healthy reports in a row, a
failed one stays failed until cleared, a fault during the count restarts
it, a deployable degraded on its own recovers with its device's reports;
each change appends a ``health`` entry, a clear a ``clear_health`` one
with the caller. The statements stay bounded for 2 or 200 devices.
"""

from unittest import mock

from oslo_utils import uuidutils
import sqlalchemy as sa

from cyborg.common import vocabulary
from cyborg import context as cyborg_context
from cyborg import exception
from cyborg.conductor import health
from cyborg.conductor import inventory_report
from cyborg.conductor import metrics as conductor_metrics
from cyborg.conductor import placement_sync
from cyborg.conductor import report_validation
from cyborg.db import models
from cyborg.db.queries import health as health_queries
from cyborg import metrics
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.unit.conductor import reports
from cyborg.tests.unit.objects import test_list_statement_counts

HOST = 'compute-1'
HEALTHY = vocabulary.Health.HEALTHY
DEGRADED = vocabulary.Health.DEGRADED
FAILED = vocabulary.Health.FAILED
Device = models.Device.__table__
Deployable = models.Deployable.__table__
History = models.HistoryEntry.__table__
REGION = 'fpga-0000:5e:00.0-region0'


class DecideTests(base.TestCase):
    """The rule, row by row (recovery after 3 reports)."""

    def decide(self, current, count, reported):
        return health.decide(current, count, reported, 'why', 3)

    def test_a_fault_is_taken_at_once(self):
        self.assertEqual(health.Decision(health.CHANGE, DEGRADED, 'why'),
                         self.decide(HEALTHY, 0, DEGRADED))
        self.assertEqual(health.Decision(health.CHANGE, FAILED, 'why'),
                         self.decide(HEALTHY, 0, FAILED))
        self.assertEqual(health.Decision(health.CHANGE, FAILED, 'why'),
                         self.decide(DEGRADED, 2, FAILED))

    def test_degraded_counts_healthy_reports_then_recovers(self):
        self.assertEqual(health.COUNT,
                         self.decide(DEGRADED, 0, HEALTHY).action)
        self.assertEqual(health.COUNT,
                         self.decide(DEGRADED, 1, HEALTHY).action)
        recovered = self.decide(DEGRADED, 2, HEALTHY)
        self.assertEqual((health.CHANGE, HEALTHY),
                         (recovered.action, recovered.health))
        self.assertIn('3 healthy report(s)', recovered.reason)

    def test_a_fault_again_restarts_the_count(self):
        self.assertEqual(health.RESTART,
                         self.decide(DEGRADED, 2, DEGRADED).action)
        self.assertIsNone(self.decide(DEGRADED, 0, DEGRADED))

    def test_failed_stays_failed_and_healthy_stays_healthy(self):
        for reported in vocabulary.Health.ALL:
            self.assertIsNone(self.decide(FAILED, 5, reported))
        self.assertIsNone(self.decide(HEALTHY, 0, HEALTHY))


class ValidationTests(base.TestCase):
    """What report_validation accepts of a device's health."""

    def validate(self, **fields):
        primitive = reports.report(reports.fpga(0x5e))[0]
        primitive.update(fields)
        [device] = report_validation.validate(HOST, [primitive])
        return device.health, device.health_reason

    def test_health_and_reason(self):
        self.assertEqual((HEALTHY, None), self.validate())
        self.assertEqual((FAILED, 'fatal'),
                         self.validate(health=FAILED, health_reason='fatal'))
        self.assertEqual((DEGRADED, None),
                         self.validate(health=DEGRADED, health_reason=''))

    def test_a_long_reason_is_cut_to_its_column(self):
        health, reason = self.validate(health=DEGRADED,
                                       health_reason='x' * 1000)
        self.assertEqual(255, len(reason))
        self.assertTrue(reason.endswith('...'))

    def test_a_bad_health_or_reason_refuses_the_report(self):
        for fields in ({'health': 'sick'}, {'health': None},
                       {'health': 1}, {'health_reason': 5}):
            error = self.assertRaises(exception.Invalid, self.validate,
                                      **fields)
            self.assertIn(HOST, str(error))


class HealthReportCase:
    """Reports of a one-card host whose health the test sets."""

    recovery_reports = 3
    # The database: SQLite, or a server (cyborg/tests/functional/db).
    backend = 'sqlite'

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(
            database.Database(backend=self.backend))
        self.context = cyborg_context.get_admin_context()

    def report(self, health_word=HEALTHY, reason=None, host=HOST, bus=0x5e):
        card = reports.fpga(bus)
        card.health, card.health_reason = health_word, reason
        return inventory_report.apply(self.context, host,
                                      reports.report(card),
                                      self.recovery_reports)

    def device(self, host=HOST):
        with self.database.engine.connect() as connection:
            return connection.execute(sa.select(Device).where(
                Device.c.hostname == host)).mappings().one()

    def deployable(self, name=REGION):
        with self.database.engine.connect() as connection:
            return connection.execute(sa.select(Deployable).where(
                Deployable.c.name == name)).mappings().one()

    def entries(self, event=vocabulary.HistoryEvent.HEALTH):
        with self.database.engine.connect() as connection:
            return [dict(row) for row in connection.execute(
                sa.select(History).where(History.c.event == event).order_by(
                    History.c.id)).mappings()]

    def state(self, row):
        return (row['health'], row['health_reason'], row['healthy_reports'])


class ReportTests(HealthReportCase, base.TestCase):
    """Reports applied with the policy, on SQLite."""

    def test_an_old_agent_without_health_reads_healthy(self):
        primitive = reports.report(reports.fpga(0x5e))[0]
        del primitive['health'], primitive['health_reason']
        inventory_report.apply(self.context, HOST, [primitive])
        self.assertEqual((HEALTHY, None, 0), self.state(self.device()))
        self.assertEqual([], self.entries())

    def test_a_new_device_reported_degraded_is_degraded(self):
        self.report(DEGRADED, 'AER non-fatal errors: 2')
        self.assertEqual((DEGRADED, 'AER non-fatal errors: 2', 0),
                         self.state(self.device()))
        [entry] = self.entries()
        device = self.device()
        self.assertEqual(
            (device['id'], device['uuid'], None, 'ok', HOST,
             'degraded: AER non-fatal errors: 2'),
            (entry['device_id'], entry['device_uuid'],
             entry['deployable_id'], entry['outcome'], entry['agent'],
             entry['reason']))

    def test_degraded_recovers_after_n_healthy_reports_in_a_row(self):
        self.report()
        self.report(DEGRADED, 'transient')
        since = self.device()['health_since']
        self.assertIsNotNone(since)
        self.report()
        self.report()
        self.assertEqual((DEGRADED, 'transient', 2),
                         self.state(self.device()))
        self.assertEqual(since, self.device()['health_since'])
        self.report()
        self.assertEqual((HEALTHY, '3 healthy report(s) in a row', 0),
                         self.state(self.device()))
        self.assertEqual([DEGRADED, HEALTHY],
                         [entry['reason'].split(':')[0]
                          for entry in self.entries()])

    def test_a_fault_during_the_count_restarts_it(self):
        self.report(DEGRADED, 'first')
        self.report()
        self.report()
        self.report(DEGRADED, 'again')
        self.assertEqual((DEGRADED, 'again', 0), self.state(self.device()))
        self.report()
        self.report()
        self.assertEqual(DEGRADED, self.device()['health'])
        self.report()
        self.assertEqual(HEALTHY, self.device()['health'])
        # Degraded twice in a row is one change.
        self.assertEqual(2, len(self.entries()))

    def test_failed_stays_failed_until_cleared(self):
        self.report(DEGRADED, 'first')
        self.report(FAILED, 'AER fatal errors: 1')
        for _ in range(5):
            self.report()
        self.assertEqual((FAILED, 'AER fatal errors: 1', 0),
                         self.state(self.device()))
        self.report(DEGRADED, 'later')
        self.assertEqual(FAILED, self.device()['health'])

    def test_a_deployable_degraded_on_its_own_recovers_with_its_device(self):
        self.report()
        region = self.deployable()
        health_queries.set_deployable_health(self.context, region['id'],
                                             DEGRADED, 'verification failed')
        self.report()
        self.report(DEGRADED, 'device fault')
        self.assertEqual((DEGRADED, 0), (self.deployable()['health'],
                                         self.deployable()['healthy_reports']))
        self.report()
        self.report()
        self.assertEqual(2, self.deployable()['healthy_reports'])
        self.report()
        self.assertEqual(HEALTHY, self.deployable()['health'])
        [entry] = [entry for entry in self.entries()
                   if entry['deployable_id'] is not None]
        self.assertEqual((region['uuid'], HOST),
                         (entry['deployable_uuid'], entry['agent']))

    def test_a_failed_deployable_stays_failed(self):
        self.report()
        health_queries.set_deployable_health(
            self.context, self.deployable()['id'], FAILED, 'broken')
        for _ in range(4):
            self.report()
        self.assertEqual(FAILED, self.deployable()['health'])

    def test_changes_are_counted_when_metrics_are_on(self):
        def count(health_word):
            return conductor_metrics.REGISTRY.get_sample_value(
                'cyborg_conductor_health_changes_total',
                {'kind': 'device', 'health': health_word,
                 'cause': 'report'}) or 0

        degraded, failed = count(DEGRADED), count(FAILED)
        self.report(DEGRADED, 'x')
        self.assertEqual(degraded, count(DEGRADED))
        metrics.enable()
        self.addCleanup(metrics.disable)
        self.report(FAILED, 'y')
        # Failed stays failed: no change, nothing counted.
        self.report(DEGRADED, 'z')
        self.assertEqual((degraded, failed + 1),
                         (count(DEGRADED), count(FAILED)))

    def test_one_recovery_report(self):
        self.recovery_reports = 1
        self.report(DEGRADED, 'x')
        self.report()
        self.assertEqual(HEALTHY, self.device()['health'])


class ClearTests(HealthReportCase, base.TestCase):
    """An operator's clear, through ``health.clear``."""

    def setUp(self):
        super().setUp()
        self.synced = []
        self.patch(placement_sync, 'sync_host',
                   lambda context, placement, host: self.synced.append(host))
        self.caller = cyborg_context.RequestContext(
            user_id='operator', project_id='admin-project', is_admin=True,
            request_id='req-%s' % uuidutils.generate_uuid())

    def test_clear_of_a_failed_device(self):
        self.report(FAILED, 'fatal')
        changed = health.clear(self.caller, mock.sentinel.placement,
                               health.DEVICE, self.device()['uuid'])
        self.assertTrue(changed)
        self.assertEqual((HEALTHY, None, 0), self.state(self.device()))
        self.assertEqual([HOST], self.synced)
        [entry] = self.entries(vocabulary.HistoryEvent.CLEAR_HEALTH)
        self.assertEqual(
            ('operator', 'admin-project', self.caller.request_id, 'ok',
             self.device()['uuid'], None),
            (entry['user_id'], entry['project_id'], entry['request_id'],
             entry['outcome'], entry['device_uuid'],
             entry['deployable_uuid']))
        # Healthy reports keep it healthy.
        self.report()
        self.assertEqual(HEALTHY, self.device()['health'])

    def test_clear_of_a_deployable_and_of_a_healthy_one(self):
        self.report()
        region = self.deployable()
        health_queries.set_deployable_health(self.context, region['id'],
                                             FAILED, 'broken')
        self.assertTrue(health.clear(self.caller, None, health.DEPLOYABLE,
                                     region['uuid']))
        self.assertEqual(HEALTHY, self.deployable()['health'])
        # Clearing a healthy one changes nothing, writes no entry, but
        # syncs (a failed sync is retried).
        self.assertFalse(health.clear(self.caller, None, health.DEPLOYABLE,
                                      region['uuid']))
        [entry] = self.entries(vocabulary.HistoryEvent.CLEAR_HEALTH)
        self.assertEqual(region['uuid'], entry['deployable_uuid'])
        self.assertEqual([HOST, HOST], self.synced)

    def test_unknown_uuid_and_kind(self):
        self.assertRaises(exception.ResourceNotFound, health.clear,
                          self.caller, None, health.DEVICE,
                          uuidutils.generate_uuid())
        self.assertRaises(exception.ResourceNotFound, health.clear,
                          self.caller, None, health.DEPLOYABLE, 'a\x00b')
        self.assertRaises(exception.Invalid, health.clear,
                          self.caller, None, 'host', 'x')
        self.assertEqual([], self.synced)


class StatementTests(HealthReportCase, base.TestCase):
    """Health costs the same statements for 2 devices or 200."""

    def statements(self, host, count, health_word, reason=None):
        cards = []
        for bus in range(count):
            card = reports.fpga(bus)
            card.health, card.health_reason = health_word, reason
            cards.append(card)
        with test_list_statement_counts.counting_statements(
                self.database.engine) as statements:
            inventory_report.apply(self.context, host,
                                   reports.report(*cards), 3)
        return statements

    def test_counting_healthy_reports_is_one_statement(self):
        for host, count in (('compute-1', 2), ('compute-2', 200)):
            self.statements(host, count, HEALTHY)
            self.statements(host, count, DEGRADED, 'x')
        for_two = self.statements('compute-1', 2, HEALTHY)
        for_many = self.statements('compute-2', 200, HEALTHY)
        self.assertEqual(len(for_two), len(for_many))
        # The lock, 4 reads and the count of the degraded devices.
        self.assertEqual(6, len(for_many), for_many)
        self.assertIn('healthy_reports', for_many[-1])
