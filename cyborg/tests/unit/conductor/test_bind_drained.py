"""A bind on a drained provider: refused when recorded after the drain,
allowed to finish when recorded before it (``bind_transactions``)."""

import datetime

import sqlalchemy as sa

from cyborg.tests import base
from cyborg.tests.unit.conductor import test_bind_transactions

Deployable = test_bind_transactions.Deployable
Device = test_bind_transactions.Device


class DrainedBindTests(test_bind_transactions.BindingTestsBase):

    def _drain(self, table, where, since):
        self.execute(sa.update(table).where(where).values(drain_since=since))

    def _region(self, rp_uuid):
        with self.database.engine.connect() as connection:
            return connection.execute(sa.select(Deployable).where(
                Deployable.c.rp_uuid == rp_uuid)).one()

    def _assert_refused(self, arq_uuid, rp_uuid):
        self.assertEqual({arq_uuid: 'BindFailed'},
                         self.binder.bind([arq_uuid]))
        self.assertEqual('resource provider %s is drained' % rp_uuid,
                         self.arq(arq_uuid).state_reason)
        self.assertEqual(0, self.handles_in_use())
        self.assertEqual('failed', self.nova.events()[-1]['status'])

    def test_a_bind_recorded_after_a_region_drain_fails(self):
        rp_uuid = self.providers[0]
        past = datetime.datetime.utcnow() - datetime.timedelta(minutes=1)
        self._drain(Deployable, Deployable.c.rp_uuid == rp_uuid, past)

        self._assert_refused(self.make_arq(rp_uuid), rp_uuid)
        # Another card's provider is not drained.
        other = self.make_arq(self.providers[3])
        self.assertEqual({other: 'Bound'}, self.binder.bind([other]))

    def test_a_bind_recorded_after_a_device_drain_fails(self):
        rp_uuid = self.providers[0]
        region = self._region(rp_uuid)
        past = datetime.datetime.utcnow() - datetime.timedelta(minutes=1)
        self._drain(Device, Device.c.id == region.device_id, past)

        self._assert_refused(self.make_arq(rp_uuid), rp_uuid)

    def test_a_drain_of_a_parent_or_root_takes_the_region_out(self):
        rp_uuid = self.providers[3]
        region = self._region(rp_uuid)
        above = {region.parent_id, region.root_id} - {None, region.id}
        self.assertTrue(above, 'the fake region has a parent or root')
        past = datetime.datetime.utcnow() - datetime.timedelta(minutes=1)
        self._drain(Deployable, Deployable.c.id.in_(above), past)

        self._assert_refused(self.make_arq(rp_uuid), rp_uuid)

    def test_a_bind_recorded_before_the_drain_may_finish(self):
        rp_uuid = self.providers[0]
        arq_uuid = self.make_arq(rp_uuid)
        later = datetime.datetime.utcnow() + datetime.timedelta(seconds=1)
        self._drain(Deployable, Deployable.c.rp_uuid == rp_uuid, later)

        self.assertEqual({arq_uuid: 'Bound'}, self.binder.bind([arq_uuid]))
        self.assertEqual(1, self.handles_in_use())

    def test_an_undrained_provider_binds_again(self):
        rp_uuid = self.providers[0]
        past = datetime.datetime.utcnow() - datetime.timedelta(minutes=1)
        self._drain(Deployable, Deployable.c.rp_uuid == rp_uuid, past)
        self._drain(Deployable, Deployable.c.rp_uuid == rp_uuid, None)

        arq_uuid = self.make_arq(rp_uuid)
        self.assertEqual({arq_uuid: 'Bound'}, self.binder.bind([arq_uuid]))


class SQLiteDrainedBindTests(DrainedBindTests, base.TestCase):
    pass


class MySQLDrainedBindTests(DrainedBindTests, base.TestCase):
    backend = 'mysql'


class PostgreSQLDrainedBindTests(DrainedBindTests, base.TestCase):
    backend = 'postgresql'
