"""What a bind writes beside its outcome: the attach handle it skips, and
the Nova events it records as owed (``bind_finishing``).

The cases run on SQLite here and on MariaDB and PostgreSQL in
``cyborg.tests.functional.db.test_bind_transactions_concurrency``, over
the fixture of ``test_bind_transactions``.
"""

import sqlalchemy as sa
from oslo_utils import uuidutils

from cyborg.tests import base
from cyborg.tests.unit.conductor import test_bind_transactions as cases


class BindWritesTests(cases.BindingTestsBase):

    def test_a_handle_marked_free_that_an_arq_holds_is_skipped(self):
        instance = uuidutils.generate_uuid()
        holder = self.make_arq(self.providers[0], instance)
        self.assertEqual({holder: 'Bound'}, self.binder.bind([holder]))
        # A report (or a bug) marks the held handle free again.
        self.execute(sa.update(cases.AttachHandle).values(in_use=False))
        held = self.arq_row(holder).attach_handle_id

        arq_uuid = self.make_arq(self.providers[0])
        with self.assertLogs('cyborg.conductor.bind_transactions',
                             'WARNING') as logs:
            self.assertEqual({arq_uuid: 'Bound'},
                             self.binder.bind([arq_uuid]))

        taken = self.arq_row(arq_uuid).attach_handle_id
        self.assertNotEqual(held, taken)
        self.assertIn('Attach handles [%d] are marked free but ARQs hold '
                      'them' % held, '\n'.join(logs.output))

    def test_a_batch_tells_only_the_instances_it_finishes(self):
        # One batch ends an ARQ of an instance whose other ARQ is still
        # binding, and the only ARQ of another instance.
        waiting = uuidutils.generate_uuid()
        first = self.make_arq(self.providers[0], waiting)
        second = self.make_arq(self.providers[3], waiting)
        alone = self.make_arq(self.providers[3])

        self.binder.bind([first, alone])

        self.assertEqual([[alone]], [[event['tag'] for event in events]
                                     for events in self.nova.sent])
        # The waiting instance's event is owed, and nobody sends it yet.
        row = self.arq_row(first)
        self.assertTrue(row.bind_event_pending)
        self.assertIsNone(row.bind_owner)
        self.assertIsNone(row.bind_lease_expires_at)
        self.assertIsNone(self.arq_row(alone).bind_event_pending)

        self.binder.bind([second])

        self.assertEqual(sorted([first, second]), sorted(
            event['tag'] for event in self.nova.sent[1]))
        for arq_uuid in (first, second):
            row = self.arq_row(arq_uuid)
            self.assertIsNone(row.bind_event_pending)
            self.assertIsNone(row.bind_owner)

    def test_without_nova_no_event_is_owed(self):
        nova = cases.RecordingNova(configured=False)
        binder = self.make_binder('conductor-2', nova=nova)
        instance = uuidutils.generate_uuid()
        bound = self.make_arq(self.providers[0], instance)
        failed = self.make_arq(self.providers[1])

        self.assertEqual({bound: 'Bound', failed: 'BindFailed'},
                         binder.bind([bound, failed]))

        for arq_uuid in (bound, failed):
            row = self.arq_row(arq_uuid)
            self.assertIsNone(row.bind_event_pending)
            self.assertIsNone(row.bind_owner)
            self.assertIsNone(row.bind_lease_expires_at)
        # The client is handed them once, to log them as not sent.
        self.assertEqual([sorted([bound, failed])],
                         [sorted(event['tag'] for event in events)
                          for events in nova.sent])
        binder.sweep(initial=True)
        self.assertEqual(1, len(nova.sent))


class SQLiteBindWritesTests(BindWritesTests, base.TestCase):
    pass
