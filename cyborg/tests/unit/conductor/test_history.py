"""The history the conductor appends: programs, binds, unbinds, deletes,
enables and disables, each with who asked and how it ended, in the
transaction of the change; and its pruning by retention, in batches.

Binds run as the binder runs them, against a real agent with the fake
driver (``test_bind_transactions.BindingTestsBase``); programs against a
real Glance with a scripted agent (``test_programming``).
"""

import datetime
import time

import sqlalchemy as sa
from oslo_utils import uuidutils

from cyborg import conf
from cyborg import context as cyborg_context
from cyborg import exception
from cyborg.clients import glance as glance_client
from cyborg.conductor import arqs
from cyborg.conductor import devices
from cyborg.conductor import history
from cyborg.conductor import placement_sync
from cyborg.conductor import programming
from cyborg.db import models
from cyborg.db.queries import history as history_queries
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.fixtures import glance as glance_fixture
from cyborg.tests.unit.conductor import test_bind_transactions
from cyborg.tests.unit.conductor import test_programming
from cyborg.tests.unit.db import records
from cyborg.tests.unit.objects import test_list_statement_counts

HOST = test_bind_transactions.HOST
TABLE = models.HistoryEntry.__table__
Deployable = models.Deployable.__table__
Device = models.Device.__table__
ScriptedAgents = test_programming.ScriptedAgents


def caller(**values):
    """A request context as Nova's (service role, service token)."""
    values.setdefault('user_id', 'nova-user')
    values.setdefault('project_id', 'service-project')
    values.setdefault('roles', ['admin', 'service'])
    return cyborg_context.RequestContext(
        request_id='req-%s' % uuidutils.generate_uuid(),
        has_service_token=True, is_admin=True, **values)


def entries(engine, **where):
    """Every history entry (oldest first) as a dict, those whose columns
    equal ``where``."""
    query = sa.select(TABLE).order_by(TABLE.c.id)
    for name, value in where.items():
        query = query.where(TABLE.c[name] == value)
    with engine.connect() as connection:
        return [dict(row) for row in connection.execute(query).mappings()]


class BindHistoryTests(test_bind_transactions.BindingTestsBase):
    """Binds (Bound and BindFailed), unbinds and deletes."""

    def region(self, rp_uuid):
        """(deployable uuid, device uuid) of the region of ``rp_uuid``."""
        with self.database.engine.connect() as connection:
            return tuple(connection.execute(sa.select(
                Deployable.c.uuid, Device.c.uuid).join(
                Device, Device.c.id == Deployable.c.device_id).where(
                Deployable.c.rp_uuid == rp_uuid)).one())

    def test_a_bound_and_a_failed_bind_are_recorded_with_their_outcome(self):
        bound = self.make_arq(self.providers[0])
        failed = self.make_arq(self.providers[1])

        self.binder.bind([bound])
        self.binder.bind([failed])

        rows = entries(self.database.engine)
        self.assertEqual(
            [(bound, 'bind', 'ok', None), (failed, 'bind', 'failed')],
            [(row['arq_uuid'], row['event'], row['outcome'])
             + ((row['reason'],) if row['outcome'] == 'ok' else ())
             for row in rows])
        self.assertTrue(rows[1]['reason'])
        self.assertEqual(self.arq(failed).state_reason, rows[1]['reason'])
        for row, rp_uuid, arq_uuid in ((rows[0], self.providers[0], bound),
                                       (rows[1], self.providers[1], failed)):
            self.assertEqual(self.region(rp_uuid),
                             (row['deployable_uuid'], row['device_uuid']))
            self.assertEqual(
                (self.arq(arq_uuid).instance_uuid, 'project-1', HOST),
                (row['instance_uuid'], row['arq_project_id'], row['agent']))
            self.assertIsNotNone(row['device_id'])
            self.assertIsNotNone(row['deployable_id'])

    def test_unbind_and_delete_record_who_asked(self):
        first = self.make_arq(self.providers[0])
        second = self.make_arq(self.providers[3])
        self.binder.bind([first])
        self.binder.bind([second])
        nova = caller()

        arqs.unbind(nova, [first])
        arqs.delete(nova, arq_uuids=[second])
        # Unbinding again an ARQ that holds nothing records nothing.
        arqs.delete(nova, arq_uuids=[first])

        rows = entries(self.database.engine)
        self.assertEqual([('bind', first), ('bind', second),
                          ('unbind', first), ('delete', second)],
                         [(row['event'], row['arq_uuid']) for row in rows])
        for row in rows[2:]:
            self.assertEqual(('ok', 'nova-user', 'service-project',
                              nova.request_id, 'project-1'),
                             (row['outcome'], row['user_id'],
                              row['project_id'], row['request_id'],
                              row['arq_project_id']))
        self.assertEqual(self.region(self.providers[3]),
                         (rows[3]['deployable_uuid'], rows[3]['device_uuid']))

    def record(self, requester, rp_uuid):
        """An Initial ARQ whose bind ``requester`` records on ``rp_uuid``."""
        arq_uuid = records.make_arq(self.context, self.profile,
                                    project_id='project-1').uuid
        arqs.record_bind(requester, {arq_uuid: {
            'hostname': HOST, 'device_rp_uuid': rp_uuid,
            'instance_uuid': uuidutils.generate_uuid()}})
        return arq_uuid

    def test_the_end_of_a_bind_names_who_asked_for_it(self):
        nova = caller()
        plug = caller(user_id='os-acc-user', project_id='tenant-project')
        bound = self.record(nova, self.providers[0])
        failed = self.record(plug, self.providers[1])
        # Another binder (a takeover) ends them: the requester is the
        # ARQs', not the binder's.
        other = self.make_binder('conductor-2')
        other.bind([bound])
        other.bind([failed])

        rows = entries(self.database.engine, event='bind')
        self.assertEqual(
            [(bound, 'ok', 'nova-user', 'service-project', nova.request_id),
             (failed, 'failed', 'os-acc-user', 'tenant-project',
              plug.request_id)],
            [(row['arq_uuid'], row['outcome'], row['user_id'],
              row['project_id'], row['request_id']) for row in rows])

    def test_an_unbind_forgets_the_bind_requester(self):
        arq_uuid = self.record(caller(), self.providers[0])
        self.binder.bind([arq_uuid])
        self.assertEqual('nova-user', self.arq_row(arq_uuid).bind_user_id)
        arqs.unbind(caller(user_id='another'), [arq_uuid])
        row = self.arq_row(arq_uuid)
        self.assertEqual((None, None, None), (
            row.bind_user_id, row.bind_project_id, row.bind_request_id))
        # A bind recorded without a requester (before the columns) names
        # the binder's context, as before.
        self.execute(sa.update(models.ARQ.__table__).values(
            state='BindStarted', hostname=HOST,
            device_rp_uuid=self.providers[0],
            instance_uuid=uuidutils.generate_uuid()).where(
                models.ARQ.__table__.c.uuid == arq_uuid))
        self.binder.bind([arq_uuid])
        last = entries(self.database.engine, event='bind')[-1]
        self.assertEqual(
            (arq_uuid, self.binder.context.user_id,
             self.binder.context.request_id),
            (last['arq_uuid'], last['user_id'], last['request_id']))

    def bind_statements(self, count):
        """(statements, entries) of binding ``count`` ARQs as one batch."""
        instance = uuidutils.generate_uuid()
        arq_uuids = [self.make_arq(self.providers[3], instance)
                     for _ in range(count)]
        before = len(entries(self.database.engine))
        with test_list_statement_counts.counting_statements(
                self.database.engine) as statements:
            ended = self.binder.bind(arq_uuids)
        self.assertEqual(['Bound'] * count, list(ended.values()))
        recorded = len(entries(self.database.engine)) - before
        arqs.delete(caller(), arq_uuids=arq_uuids)
        return len(statements), recorded

    def test_a_bind_records_every_arq_in_one_statement(self):
        one_statements, one_entries = self.bind_statements(1)
        eight_statements, eight_entries = self.bind_statements(8)

        self.assertEqual((1, 8), (one_entries, eight_entries))
        self.assertEqual(one_statements, eight_statements)

    def test_unbind_statements_do_not_grow_with_the_arqs(self):
        counts = []
        for count in (1, 8):
            instance = uuidutils.generate_uuid()
            arq_uuids = [self.make_arq(self.providers[3], instance)
                         for _ in range(count)]
            self.binder.bind(arq_uuids)
            with test_list_statement_counts.counting_statements(
                    self.database.engine) as statements:
                arqs.unbind(caller(), arq_uuids)
            counts.append(len(statements))
        self.assertEqual(9, len(entries(self.database.engine,
                                        event='unbind')))
        self.assertEqual(counts[0], counts[1])


class SQLiteBindHistoryTests(BindHistoryTests, base.TestCase):
    pass


class MySQLBindHistoryTests(BindHistoryTests, base.TestCase):
    backend = 'mysql'


class PostgreSQLBindHistoryTests(BindHistoryTests, base.TestCase):
    backend = 'postgresql'


class DeviceHistoryTests(base.TestCase):
    """Enable and disable of a device."""

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(database.Database('sqlite'))
        self.context = cyborg_context.get_admin_context()
        self.device = records.make_device(self.context)
        # Placement is test_devices' concern: not called here.
        self.synced = []
        self.patch(placement_sync, 'sync_host',
                   lambda *args: self.synced.append(args))

    def test_disable_and_enable_record_who_and_why(self):
        admin = caller(user_id='operator', project_id='admin-project',
                       roles=['admin'])

        devices.set_status(admin, None, self.device.uuid, 'maintaining',
                           'fan replaced')
        devices.set_status(admin, None, self.device.uuid, 'enabled', None)

        rows = entries(self.database.engine)
        self.assertEqual(
            [('disable', 'ok', 'fan replaced'), ('enable', 'ok', None)],
            [(row['event'], row['outcome'], row['reason']) for row in rows])
        for row in rows:
            self.assertEqual(
                (self.device.uuid, self.device.id, None, None, 'operator',
                 'admin-project', admin.request_id, None),
                (row['device_uuid'], row['device_id'],
                 row['deployable_uuid'], row['arq_uuid'], row['user_id'],
                 row['project_id'], row['request_id'], row['agent']))
        self.assertEqual(2, len(self.synced))

    def test_a_refused_status_change_records_nothing(self):
        for uuid, status in ((uuidutils.generate_uuid(), 'maintaining'),
                             (self.device.uuid, 'broken')):
            self.assertRaises(exception.CyborgException, devices.set_status,
                              self.context, None, uuid, status, None)
        self.assertEqual([], entries(self.database.engine))


class ProgramHistoryTests(base.TestCase):
    """Programs: ok with the image and its hash, failed with why, each
    with who asked and the host that did it."""

    # Glance's image and the program call, as test_programming makes them.
    _image = test_programming.ProgrammerTest._image
    _row = test_programming.ProgrammerTest._row

    def setUp(self):
        super().setUp()
        self.useFixture(database.Database('sqlite'))
        self.useFixture(glance_fixture.GlanceFixture())
        self.context = cyborg_context.get_admin_context()
        device = records.make_device(
            self.context, vendor='0x8086', hostname='compute-1',
            vendor_board_info='{"board": "pac_arria10"}')
        self.device = device
        self.deployable = records.make_deployable(self.context, device)
        self.image_id = self._image()
        self.caller = caller(user_id='operator', project_id='admin-project',
                             roles=['admin'])

    def _program(self, agents):
        programmer = programming.Programmer(
            'conductor-1', programming.ProgramSettings(timeout=30), agents,
            glance_for=lambda context: glance_client.GlanceClient(
                conf.CONF, context))
        return programmer.program(self.caller, self.deployable.uuid,
                                  self.image_id)

    def _entries(self):
        """The deployable's entries, oldest first."""
        return [dict(zip(history_queries.READ_COLUMNS, row, strict=True))
                for row in history_queries.page(
                    self.context, deployable_uuid=self.deployable.uuid)][::-1]

    def test_a_program_records_the_image_its_hash_and_who(self):
        self._program(ScriptedAgents({'code': 0, 'message': 'loaded'}))

        [entry] = self._entries()
        image = glance_client.GlanceClient(conf.CONF).get_image(
            self.image_id)
        self.assertEqual(
            ('program', 'ok', None, self.image_id, image['os_hash_value'],
             self.device.uuid, 'compute-1', 'operator', 'admin-project',
             self.caller.request_id, None),
            (entry['event'], entry['outcome'], entry['reason'],
             entry['image_id'], entry['image_hash'], entry['device_uuid'],
             entry['agent'], entry['user_id'], entry['project_id'],
             entry['request_id'], entry['arq_uuid']))
        self.assertIsNotNone(entry['image_hash'])

    def test_a_failed_program_is_recorded_as_failed_with_why(self):
        cases = [({'code': 1, 'message': 'tool crashed'}, 'tool crashed',
                  programming.ProgrammingFailed),
                 ({'code': 3, 'message': 'wrong shell'}, 'wrong shell',
                  programming.BitstreamRejected),
                 (test_programming.oslo_messaging.MessagingTimeout('late'),
                  'did not answer', programming.AgentTimeout)]
        for answer, _, error in cases:
            self.assertRaises(error, self._program, ScriptedAgents(answer))
        # (The timeout also degrades the region: a health entry.)
        recorded = [entry for entry in self._entries()
                    if entry['event'] == 'program']
        self.assertEqual([('program', 'failed')] * 3,
                         [(entry['event'], entry['outcome'])
                          for entry in recorded])
        for entry, (_, why, _) in zip(recorded, cases, strict=True):
            self.assertIn(why, entry['reason'])
        # The lock is free again each time.
        self.assertIsNone(self._row().programming_owner)

    def test_a_refused_request_records_nothing(self):
        self.image_id = uuidutils.generate_uuid()
        self.assertRaises(programming.ImageNotUsable, self._program,
                          ScriptedAgents({'code': 0}))
        self.assertEqual([], self._entries())


class PruneTests:
    """Pruning by retention, in batches, each its own transaction."""

    backend = 'sqlite'

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(database.Database(self.backend))
        self.context = cyborg_context.get_admin_context()
        self.now = datetime.datetime(2026, 12, 7, 12, 0, 0)

    def add(self, count, days_old):
        created_at = self.now - datetime.timedelta(days=days_old)
        history_queries.append(self.context, [
            {'created_at': created_at, 'device_uuid': 'device-%d' % index,
             'event': 'enable', 'outcome': 'ok'} for index in range(count)])

    def pruner(self, retention_days=90, batch_size=4):
        return history.Pruner(self.context, history.PruneSettings(
            retention_days=retention_days, interval=3600,
            batch_size=batch_size))

    def test_entries_past_the_retention_go_in_batches(self):
        self.add(10, days_old=91)
        self.add(3, days_old=89)
        commits = []
        committed = commits.append
        sa.event.listen(self.database.engine, 'commit', committed)
        self.addCleanup(sa.event.remove, self.database.engine, 'commit',
                        committed)
        with test_list_statement_counts.counting_statements(
                self.database.engine) as statements:
            deleted = self.pruner().prune(now=self.now)

        self.assertEqual(10, deleted)
        left = entries(self.database.engine)
        self.assertEqual(3, len(left))
        self.assertEqual({self.now - datetime.timedelta(days=89)},
                         {row['created_at'] for row in left})
        # 4 + 4 + 2: three batches, each a SELECT of ids and a DELETE,
        # each committed alone.
        deletes = [text for text in statements
                   if text.lstrip().upper().startswith('DELETE')]
        self.assertEqual(3, len(deletes))
        self.assertEqual(3, len(commits))

    def test_a_retention_of_0_keeps_everything(self):
        self.add(3, days_old=3650)
        self.assertEqual(0, self.pruner(retention_days=0).prune(now=self.now))
        self.assertEqual(3, len(entries(self.database.engine)))

    def test_nothing_to_prune_costs_one_read(self):
        self.add(2, days_old=1)
        with test_list_statement_counts.counting_statements(
                self.database.engine) as statements:
            self.assertEqual(0, self.pruner().prune(now=self.now))
        self.assertEqual(1, len(statements))

    def test_the_thread_prunes_at_start_until_stopped(self):
        self.add(5, days_old=400)
        pruner = self.pruner(retention_days=1)
        pruner.start()
        self.addCleanup(pruner.stop)
        deadline = time.monotonic() + 10
        while entries(self.database.engine) and time.monotonic() < deadline:
            time.sleep(0.05)
        pruner.stop()
        self.assertEqual([], entries(self.database.engine))
        self.assertIsNone(pruner._thread)

    def test_no_thread_when_kept_forever(self):
        pruner = self.pruner(retention_days=0)
        pruner.start()
        self.assertIsNone(pruner._thread)


class SQLitePruneTests(PruneTests, base.TestCase):
    pass


class MySQLPruneTests(PruneTests, base.TestCase):
    backend = 'mysql'


class PostgreSQLPruneTests(PruneTests, base.TestCase):
    backend = 'postgresql'
