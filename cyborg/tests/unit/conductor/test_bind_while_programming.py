"""A bind and the programming lock of its deployable.

``bind_transactions.claim`` fails an ARQ whose deployable is being
programmed (``cyborg.conductor.programming``), and taking the programming
lock is refused while an ARQ holds the deployable or names its provider.
Same fixture as ``test_bind_transactions`` (a real agent, fake driver).
"""

import datetime

from cyborg.db.queries import deployables as deployable_queries
from cyborg.tests import base
from cyborg.tests.unit.conductor import test_bind_transactions

NOW = datetime.datetime(2020, 1, 1, 10, 0, 0)


class BindWhileProgrammingTests(test_bind_transactions.BindingTestsBase):

    def _region(self, card=0):
        return [deployable for deployable in self._deployables()
                if deployable.rp_uuid == self.providers[card]][0]

    def _deployables(self):
        return [row for row, _ in deployable_queries.list_deployables(
            self.context)]

    def _lock(self, now):
        return deployable_queries.start_programming(
            self.context, self._region().uuid, 'programmer', now,
            now + datetime.timedelta(minutes=10))

    def test_a_deployable_being_programmed_fails_the_bind(self):
        self.assertEqual(deployable_queries.LOCKED,
                         self._lock(datetime.datetime.utcnow()))
        arq_uuid = self.make_arq(self.providers[0])

        claimed = self.claim([arq_uuid], 'binder-1')

        self.assertEqual([], claimed.work)
        self.assertEqual([arq_uuid],
                         [decision.uuid for decision in claimed.decisions])
        self.assertIn('is being programmed', claimed.decisions[0].reason)
        self.assertEqual(0, self.handles_in_use())

    def test_a_lock_that_ran_out_does_not_count(self):
        self._lock(NOW)
        arq_uuid = self.make_arq(self.providers[0])

        claimed = self.claim([arq_uuid], 'binder-1')

        self.assertEqual([arq_uuid], [item.uuid for item in claimed.work])
        self.assertEqual([], claimed.decisions)

    def test_an_arq_naming_the_provider_refuses_the_lock(self):
        # BindStarted, recorded by arqs.record_bind: no deployable_id yet.
        self.make_arq(self.providers[0])

        self.assertEqual(deployable_queries.HELD_BY_ARQ,
                         self._lock(datetime.datetime.utcnow()))
        self.assertIsNone(self._region().programming_owner)

    def test_other_deployables_bind_normally(self):
        self._lock(datetime.datetime.utcnow())
        arq_uuid = self.make_arq(self.providers[3])

        self.assertEqual({arq_uuid: 'Bound'}, self.binder.bind([arq_uuid]))


class SQLiteBindWhileProgrammingTests(BindWhileProgrammingTests,
                                      base.TestCase):
    pass
