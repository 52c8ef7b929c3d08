"""report_digest: what an unchanged report costs, and when it is applied.

Against a SQLite database and the real openstack-placement of the
fixture, counting the SQL statements and the Placement requests of each
report as ``ConductorManager.report_inventory`` receives it.
"""

import datetime
from unittest import mock

import sqlalchemy as sa

from cyborg import conf
from cyborg import context as cyborg_context
from cyborg import exception
from cyborg.common import vocabulary
from cyborg.conductor import bind_finishing
from cyborg.conductor import report_digest
from cyborg.db import models
from cyborg.db.queries import host_locks
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.fixtures import placement as placement_fixture
from cyborg.tests.unit.clients import recording
from cyborg.tests.unit.conductor import reports
from cyborg.tests.unit.objects import test_list_statement_counts

HOST = 'compute-1'
HEALTH = vocabulary.Health
HostLock = models.HostLock.__table__
Device = models.Device.__table__
Deployable = models.Deployable.__table__
SETTINGS = report_digest.ReportSettings(recovery_reports=3,
                                        resync_interval=600)


def card(bus=0x5e, health=HEALTH.HEALTHY, reason=None, **fields):
    device = reports.fpga(bus, **fields)
    device.health, device.health_reason = health, reason
    return device


class ReportDigestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(database.Database())
        self.placement = self.useFixture(placement_fixture.PlacementFixture())
        self.context = cyborg_context.get_admin_context()
        self.client = recording.RecordingClient(conf.CONF)
        self.applied_hosts = []

    def receive(self, *devices, settings=SETTINGS, host=HOST):
        """Send one report; return (applied, SQL statements, Placement
        requests)."""
        before = len(self.client.requests)
        with test_list_statement_counts.counting_statements(
                self.database.engine) as statements:
            applied = report_digest.receive(
                self.context, self.client, host, reports.report(*devices),
                settings, on_applied=self.applied_hosts.append)
        return applied, statements, self.client.requests[before:]

    def lock_row(self, host=HOST):
        with self.database.engine.connect() as connection:
            return connection.execute(sa.select(HostLock).where(
                HostLock.c.host == host)).mappings().one()

    def age_sync(self, seconds):
        """Move the host's last sync ``seconds`` into the past."""
        synced = self.lock_row()['report_synced_at']
        with self.database.engine.begin() as connection:
            connection.execute(sa.update(HostLock).values(
                report_synced_at=synced - datetime.timedelta(
                    seconds=seconds)))

    def provider_uuids(self):
        response = self.placement.adapter.get(
            '/resource_providers', params={'resources': 'FPGA:1'})
        return {provider['uuid']
                for provider in response.json()['resource_providers']}


class TestUnchangedReport(ReportDigestCase):

    def test_an_unchanged_report_costs_one_statement_and_no_request(self):
        applied, statements, requests = self.receive(card(), card(0x5f))
        self.assertTrue(applied)
        self.assertGreater(len(statements), 1)
        self.assertTrue(requests)
        self.assertIsNotNone(self.lock_row()['report_digest'])
        self.assertIsNotNone(self.lock_row()['report_synced_at'])

        for _ in range(3):
            applied, statements, requests = self.receive(card(), card(0x5f))
            self.assertFalse(applied)
            self.assertEqual(1, len(statements), statements)
            self.assertIn('host_locks', statements[0])
            self.assertEqual([], requests)
        # host_status calls hear of every report, skipped or not.
        self.assertEqual([HOST] * 4, self.applied_hosts)

    def test_a_restarted_conductor_applies_the_first_report_in_full(self):
        self.receive(card())
        self.assertFalse(self.receive(card())[0])
        # A new conductor process: a Placement client of its own, which
        # has synced nothing yet, although the digest is stored.
        self.client = recording.RecordingClient(conf.CONF)

        applied, statements, requests = self.receive(card())
        self.assertTrue(applied)
        self.assertTrue(requests)
        self.assertFalse(self.receive(card())[0])

    def test_a_changed_report_is_applied_and_synced(self):
        self.receive(card(), card(0x5f))
        self.receive(card(), card(0x5f))

        applied, statements, requests = self.receive(card(), card(0x60))
        self.assertTrue(applied)
        # The reconciliation's statements (lock, reads, writes) and the
        # mark of the sync.
        self.assertGreater(len(statements), 5)
        self.assertIn(('POST', '/resource_providers'), requests)
        self.assertIn('DELETE', {method for method, _ in requests})
        self.assertEqual(2, len(self.provider_uuids()))

        applied, statements, requests = self.receive(card(), card(0x60))
        self.assertFalse(applied)
        self.assertEqual((1, []), (len(statements), requests))

    def test_the_order_of_keys_does_not_change_the_digest(self):
        primitive = reports.report(card())
        shuffled = [dict(reversed(list(device.items())))
                    for device in primitive]
        self.assertEqual(report_digest.digest(primitive),
                         report_digest.digest(shuffled))
        self.assertNotEqual(report_digest.digest(primitive),
                            report_digest.digest(reports.report(card(0x5f))))

    def test_two_hosts_have_their_own_digests(self):
        self.receive(card())
        self.assertTrue(self.receive(card(), host='compute-2')[0])
        self.assertFalse(self.receive(card())[0])
        self.assertFalse(self.receive(card(), host='compute-2')[0])


class TestResync(ReportDigestCase):

    def test_an_unchanged_report_past_the_interval_is_applied(self):
        self.receive(card())
        self.age_sync(599)
        self.assertFalse(self.receive(card())[0])

        self.age_sync(2)
        applied, statements, requests = self.receive(card())
        self.assertTrue(applied)
        self.assertGreater(len(statements), 1)
        # The conductor's memory of the host: the compute node and its
        # tree are read, nothing written.
        self.assertEqual(['GET', 'GET'], [method for method, _ in requests])
        # Synced again: skipped for another interval.
        self.assertFalse(self.receive(card())[0])

    def test_the_resync_repairs_a_provider_deleted_in_placement(self):
        self.receive(card())
        (rp_uuid,) = self.provider_uuids()
        self.placement.adapter.delete('/resource_providers/%s' % rp_uuid)
        self.assertEqual(set(), self.provider_uuids())

        # Within the interval an unchanged report does not look.
        self.assertFalse(self.receive(card())[0])
        self.assertEqual(set(), self.provider_uuids())

        self.age_sync(601)
        self.assertTrue(self.receive(card())[0])
        self.assertEqual({rp_uuid}, self.provider_uuids())

    def test_an_interval_of_0_applies_every_report(self):
        settings = report_digest.ReportSettings(recovery_reports=3,
                                                resync_interval=0)
        self.receive(card(), settings=settings)
        for _ in range(2):
            applied, statements, _ = self.receive(card(), settings=settings)
            self.assertTrue(applied)
            self.assertGreater(len(statements), 1)
        self.assertIsNone(self.lock_row()['report_digest'])

    def test_a_failed_sync_is_repeated_by_the_next_report(self):
        with mock.patch.object(
                self.client, 'get_provider_by_name',
                side_effect=exception.PlacementUnavailable(reason='down')):
            self.assertTrue(self.receive(card())[0])
        self.assertIsNone(self.lock_row()['report_synced_at'])
        self.assertEqual(set(), self.provider_uuids())

        applied, _, requests = self.receive(card())
        self.assertTrue(applied)
        self.assertTrue(requests)
        self.assertEqual(1, len(self.provider_uuids()))
        self.assertFalse(self.receive(card())[0])

    def test_a_malformed_report_writes_nothing_and_is_not_heard(self):
        self.receive(card())
        bad = reports.report(card())
        del bad[0]['model']
        self.assertRaises(exception.Invalid, report_digest.receive,
                          self.context, self.client, HOST, bad, SETTINGS,
                          on_applied=self.applied_hosts.append)
        self.assertEqual([HOST], self.applied_hosts)
        # The last good report is still the one in step.
        self.assertFalse(self.receive(card())[0])


class TestHealthIsWeighed(ReportDigestCase):

    def device(self):
        with self.database.engine.connect() as connection:
            row = connection.execute(sa.select(Device).where(
                Device.c.hostname == HOST)).mappings().one()
        return row['health'], row['healthy_reports']

    def test_a_degraded_device_counts_every_healthy_report(self):
        self.receive(card())
        applied, _, _ = self.receive(card(health=HEALTH.DEGRADED,
                                          reason='AER: 2'))
        self.assertTrue(applied)
        self.assertEqual((HEALTH.DEGRADED, 0), self.device())
        # The same fault again is weighed again, not skipped.
        self.assertTrue(self.receive(card(health=HEALTH.DEGRADED,
                                          reason='AER: 2'))[0])

        # Healthy reports, identical, each counted: 3 to recover.
        for count in (1, 2):
            self.assertTrue(self.receive(card())[0])
            self.assertEqual((HEALTH.DEGRADED, count), self.device())
        self.assertTrue(self.receive(card())[0])
        self.assertEqual(HEALTH.HEALTHY, self.device()[0])
        # Recovered: one more applied report stores the digest again.
        self.assertTrue(self.receive(card())[0])
        self.assertFalse(self.receive(card())[0])

    def test_a_failed_device_reported_failed_is_never_skipped(self):
        for _ in range(3):
            self.assertTrue(self.receive(card(health=HEALTH.FAILED,
                                              reason='gone'))[0])
        self.assertEqual(HEALTH.FAILED, self.device()[0])
        self.assertIsNone(self.lock_row()['report_digest'])

    def test_a_region_degraded_by_verification_counts_the_next_reports(self):
        self.receive(card())
        self.assertFalse(self.receive(card())[0])
        with self.database.engine.connect() as connection:
            region_id = connection.execute(sa.select(Deployable.c.id).where(
                Deployable.c.name.like('%-region0'))).scalar_one()
        with mock.patch.object(bind_finishing.LOG, 'warning'):
            self._mark_degraded(region_id)
        self.assertIsNone(self.lock_row()['report_digest'])

        for _ in range(3):
            self.assertTrue(self.receive(card())[0])
        with self.database.engine.connect() as connection:
            self.assertEqual(HEALTH.HEALTHY, connection.execute(
                sa.select(Deployable.c.health).where(
                    Deployable.c.id == region_id)).scalar_one())
        self.assertTrue(self.receive(card())[0])
        self.assertFalse(self.receive(card())[0])

    def _mark_degraded(self, region_id):
        from cyborg.db import api as db_api

        @db_api.writer
        def mark(context):
            bind_finishing.mark_degraded(
                context, {region_id: 'not verified'},
                datetime.datetime.utcnow())
        mark(self.context)

    def test_forget_makes_the_next_report_applied(self):
        self.receive(card())
        host_locks.forget(self.context, HOST)
        self.assertTrue(self.receive(card())[0])
        self.assertFalse(self.receive(card())[0])
