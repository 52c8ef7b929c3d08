"""inventory_report.apply: an agent's report becomes the host's rows, in bulk.

How a report is checked is tested in ``test_report_validation``; here, what
a valid one writes and that a malformed one writes nothing.
``ReconciliationTests`` and ``StatementCountTests`` hold the cases; this
module runs them on SQLite and
``cyborg/tests/functional/db/test_inventory_report.py`` on MariaDB and
PostgreSQL.
"""

import sqlalchemy as sa

from cyborg import context as cyborg_context
from cyborg import exception
from cyborg import objects
from cyborg.conductor import inventory_report
from cyborg.conductor import placement_sync
from cyborg.conductor import report_validation
from cyborg.db import models
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.unit.conductor import reports
from cyborg.tests.unit.db import records
from cyborg.tests.unit.objects import test_list_statement_counts

TABLES = {
    'devices': models.Device.__table__,
    'controlpath_ids': models.ControlpathID.__table__,
    'deployables': models.Deployable.__table__,
    'attributes': models.Attribute.__table__,
    'attach_handles': models.AttachHandle.__table__,
}

# Short names for the builders the cases use on every other line.
fpga = reports.fpga
pci = reports.pci
report = reports.report


def rows_of(database_fixture, table_name, host):
    """Rows of ``table_name`` belonging to ``host``, as dicts by id order."""
    table = TABLES[table_name]
    devices = TABLES['devices']
    deployables = TABLES['deployables']
    if table_name == 'devices':
        query = sa.select(table).where(table.c.hostname == host)
    elif table_name in ('controlpath_ids', 'deployables'):
        query = sa.select(table).join(
            devices, table.c.device_id == devices.c.id).where(
            devices.c.hostname == host)
    else:
        query = sa.select(table).join(
            deployables, table.c.deployable_id == deployables.c.id).join(
            devices, deployables.c.device_id == devices.c.id).where(
            devices.c.hostname == host)
    with database_fixture.engine.connect() as connection:
        return [dict(row) for row in
                connection.execute(query.order_by(table.c.id)).mappings()]


class ReconciliationCase:
    """Helpers of the cases, for a test case that sets ``self.database``
    in setUp."""

    def setUp(self):
        super().setUp()
        self.context = cyborg_context.get_admin_context()

    def apply(self, host, *devices):
        inventory_report.apply(self.context, host, report(*devices))

    def rows(self, table_name, host='compute-1'):
        """Rows of ``table_name`` belonging to ``host``, as dicts by id order."""
        return rows_of(self.database, table_name, host)

    def snapshot(self, host='compute-1'):
        return {name: self.rows(name, host) for name in TABLES}

    def deployable(self, name, host='compute-1'):
        return next(row for row in self.rows('deployables', host)
                    if row['name'] == name)

    def bind(self, deployable_name, state='Bound', handle=True):
        """A bound ARQ on a deployable (and its first handle)."""
        deployable = self.deployable(deployable_name)
        handles = [row for row in self.rows('attach_handles')
                   if row['deployable_id'] == deployable['id']]
        profile = records.make_device_profile(self.context)
        return records.make_arq(
            self.context, profile, state=state, hostname='compute-1',
            deployable_id=deployable['id'],
            attach_handle_id=handles[0]['id'] if handle else None)


class CreationTests(ReconciliationCase):
    """A first report: devices, deployable trees, attributes, handles."""

    def test_first_report_creates_devices_and_deployable_trees(self):
        self.apply('compute-1', fpga(0x5e, vfs=2))

        [device] = self.rows('devices')
        self.assertEqual(
            ('FPGA', '0x8086', 'test-fpga', 'enabled', None),
            (device['type'], device['vendor'], device['model'],
             device['status'], device['status_reason']))
        self.assertEqual('{"class":"accelerator","device_id":"0x0b30"}',
                         device['std_board_info'])
        [cpid] = self.rows('controlpath_ids')
        self.assertEqual(
            (device['id'], 'PCI', report_validation.canonical_json(pci(0x5e))),
            (cpid['device_id'], cpid['cpid_type'], cpid['cpid_info']))

        root = self.deployable('fpga-0000:5e:00.0')
        region = self.deployable('fpga-0000:5e:00.0-region0')
        vf1 = self.deployable('fpga-0000:5e:00.0-vf1')
        vf2 = self.deployable('fpga-0000:5e:00.0-vf2')
        self.assertEqual(4, len(self.rows('deployables')))
        self.assertEqual((None, None), (root['parent_id'], root['root_id']))
        self.assertEqual((root['id'], root['id']),
                         (region['parent_id'], region['root_id']))
        for vf in (vf1, vf2):
            self.assertEqual((region['id'], root['id']),
                             (vf['parent_id'], vf['root_id']))
            self.assertEqual(1, vf['num_accelerators'])
        self.assertEqual({'test_driver'}, {row['driver_name'] for row in
                                           self.rows('deployables')})
        self.assertEqual({device['id']}, {row['device_id'] for row in
                                          self.rows('deployables')})
        # Only the region has accelerators and an rc.
        self.assertIsNotNone(region['rp_uuid'])
        self.assertEqual([None, None, None],
                         [root['rp_uuid'], vf1['rp_uuid'], vf2['rp_uuid']])

    def test_a_new_provider_uuid_is_derived_from_host_and_name(self):
        self.apply('compute-1', fpga(0x5e))
        self.apply('compute-2', fpga(0x5e))

        name = 'fpga-0000:5e:00.0-region0'
        self.assertEqual(placement_sync.provider_uuid('compute-1', name),
                         self.deployable(name)['rp_uuid'])
        self.assertEqual(placement_sync.provider_uuid('compute-2', name),
                         self.deployable(name, 'compute-2')['rp_uuid'])

    def test_a_derived_provider_uuid_still_held_is_not_given_twice(self):
        name = 'fpga-0000:5e:00.0-region0'
        derived = placement_sync.provider_uuid('compute-1', name)
        device = records.make_device(self.context, hostname='compute-1')
        records.make_deployable(self.context, device, name='kept-region',
                                rp_uuid=derived)

        self.apply('compute-1', fpga(0x5e))

        rp_uuid = self.deployable(name)['rp_uuid']
        self.assertIsNotNone(rp_uuid)
        self.assertNotEqual(derived, rp_uuid)

    def test_first_report_creates_attributes_and_attach_handles(self):
        self.apply('compute-1', fpga(0x5e, vfs=2))

        [cpid] = self.rows('controlpath_ids')
        root = self.deployable('fpga-0000:5e:00.0')
        region = self.deployable('fpga-0000:5e:00.0-region0')
        vf1 = self.deployable('fpga-0000:5e:00.0-vf1')
        vf2 = self.deployable('fpga-0000:5e:00.0-vf2')
        attributes = self.rows('attributes')
        by_key = {(row['deployable_id'], row['key']): row
                  for row in attributes}
        self.assertEqual(8, len(attributes))
        shell = by_key[(root['id'], 'shell')]
        self.assertIsNone(shell['value'])
        self.assertEqual(
            {('name', 'test-shell'), ('version', '1.0')},
            {(row['key'], row['value']) for row in attributes
             if row['parent_attribute_id'] == shell['id']})
        self.assertEqual('FPGA', by_key[(region['id'], 'rc')]['value'])
        self.assertEqual('CUSTOM_FPGA_TEST',
                         by_key[(region['id'], 'trait0')]['value'])
        self.assertEqual('vf2', by_key[(vf2['id'], 'function')]['value'])

        handles = self.rows('attach_handles')
        self.assertEqual(
            [(vf1['id'], cpid['id'], 'PCI',
              report_validation.canonical_json(pci(0x5e, 1)), False),
             (vf2['id'], cpid['id'], 'PCI',
              report_validation.canonical_json(pci(0x5e, 2)), False)],
            [(row['deployable_id'], row['cpid_id'], row['attach_type'],
              row['attach_info'], row['in_use']) for row in handles])


class UpdateTests(ReconciliationCase):
    """Later reports: rows kept, updated in place, added and dropped."""

    def test_identical_report_changes_nothing(self):
        self.apply('compute-1', fpga(0x5e), fpga(0x5f))
        first = self.snapshot()

        self.apply('compute-1', fpga(0x5e), fpga(0x5f))

        self.assertEqual(first, self.snapshot())
        for rows in first.values():
            self.assertEqual([None] * len(rows),
                             [row['updated_at'] for row in rows])

    def test_more_and_fewer_vfs_add_and_remove_deployables_and_handles(self):
        self.apply('compute-1', fpga(0x5e, vfs=2))
        region = self.deployable('fpga-0000:5e:00.0-region0')
        vf1 = self.deployable('fpga-0000:5e:00.0-vf1')

        self.apply('compute-1', fpga(0x5e, vfs=4))

        names = [row['name'] for row in self.rows('deployables')]
        self.assertEqual(6, len(names))
        vf4 = self.deployable('fpga-0000:5e:00.0-vf4')
        self.assertEqual((region['id'], region['parent_id']),
                         (vf4['parent_id'], vf4['root_id']))
        self.assertEqual(vf1, self.deployable('fpga-0000:5e:00.0-vf1'))
        self.assertEqual(4, len(self.rows('attach_handles')))
        changed_region = self.deployable('fpga-0000:5e:00.0-region0')
        self.assertEqual(4, changed_region['num_accelerators'])
        self.assertEqual(region['rp_uuid'], changed_region['rp_uuid'])

        self.apply('compute-1', fpga(0x5e, vfs=1))

        self.assertEqual(
            ['fpga-0000:5e:00.0', 'fpga-0000:5e:00.0-region0',
             'fpga-0000:5e:00.0-vf1'],
            sorted(row['name'] for row in self.rows('deployables')))
        [handle] = self.rows('attach_handles')
        self.assertEqual(vf1['id'], handle['deployable_id'])
        # The removed VFs' attributes went with them.
        self.assertEqual(7, len(self.rows('attributes')))

    def test_changed_fields_are_updated_in_place(self):
        self.apply('compute-1', fpga(0x5e))
        before = self.snapshot()

        self.apply('compute-1', fpga(0x5e, model='test-fpga-v2', in_use={2},
                                     shell_version='2.0'))

        after = self.snapshot()
        for name in TABLES:
            self.assertEqual([row['id'] for row in before[name]],
                             [row['id'] for row in after[name]], name)
        [device] = after['devices']
        self.assertEqual('test-fpga-v2', device['model'])
        self.assertIsNotNone(device['updated_at'])
        version = next(row for row in after['attributes']
                       if row['key'] == 'version')
        self.assertEqual('2.0', version['value'])
        self.assertEqual([False, True, False],
                         [row['in_use'] for row in after['attach_handles']])
        changed = {(name, row['id']) for name in TABLES
                   for row in after[name] if row['updated_at'] is not None}
        self.assertEqual(3, len(changed))

    def test_dropped_attributes_go_and_those_made_through_the_api_stay(self):
        self.apply('compute-1', fpga(0x5e))
        region = self.deployable('fpga-0000:5e:00.0-region0')
        operators = records.make_attribute(
            self.context, objects.Deployable.get_by_id(self.context,
                                                       region['id']),
            key='trait7', value='CUSTOM_OPERATOR_CHOICE')
        device = fpga(0x5e)
        region_report = device.deployables[0].children[0]
        del region_report.attributes['trait0']
        device.deployables[0].attributes['shell'] = {'name': 'test-shell'}

        self.apply('compute-1', device)

        keys = {(row['deployable_id'], row['key'], row['value'])
                for row in self.rows('attributes')}
        self.assertIn((region['id'], 'trait7', 'CUSTOM_OPERATOR_CHOICE'),
                      keys)
        self.assertIn((region['id'], 'rc', 'FPGA'), keys)
        self.assertNotIn('trait0', {key for _, key, _ in keys})
        self.assertNotIn('version', {key for _, key, _ in keys})
        self.assertEqual(operators.uuid, next(
            row['uuid'] for row in self.rows('attributes')
            if row['key'] == 'trait7'))


class RemovalTests(ReconciliationCase):
    """Unreported rows: removed, or kept and marked for bound ARQs."""

    def test_removed_device_disappears_with_all_its_rows(self):
        self.apply('compute-1', fpga(0x5e), fpga(0x5f))

        self.apply('compute-1', fpga(0x5f))

        [device] = self.rows('devices')
        [cpid] = self.rows('controlpath_ids')
        self.assertEqual(report_validation.canonical_json(pci(0x5f)),
                         cpid['cpid_info'])
        self.assertEqual(5, len(self.rows('deployables')))
        self.assertEqual(3, len(self.rows('attach_handles')))
        self.assertEqual(9, len(self.rows('attributes')))
        self.assertFalse([row for row in self.rows('deployables')
                          if '5e' in row['name']])
        with self.database.engine.connect() as connection:
            for name, table in TABLES.items():
                # No orphan is left behind, on any host.
                self.assertEqual(
                    len(self.rows(name)),
                    connection.execute(sa.select(sa.func.count()).select_from(
                        table)).scalar(), name)

        self.apply('compute-1')

        self.assertEqual({name: [] for name in TABLES}, self.snapshot())

    def test_removed_device_with_a_bound_arq_is_kept_and_marked(self):
        self.apply('compute-1', fpga(0x5e), fpga(0x5f))
        kept = self.snapshot()
        arq = self.bind('fpga-0000:5e:00.0-vf1')

        self.apply('compute-1', fpga(0x5f))

        device = next(row for row in self.rows('devices')
                      if row['id'] == kept['devices'][0]['id'])
        self.assertEqual('maintaining', device['status'])
        self.assertIn('Not reported by the agent of compute-1 since ',
                      device['status_reason'])
        self.assertTrue(device['status_reason'].endswith(
            '; kept while accelerator requests are bound'))
        self.assertEqual(len(kept['deployables']),
                         len(self.rows('deployables')))
        self.assertEqual(len(kept['attach_handles']),
                         len(self.rows('attach_handles')))

        # Still gone at the next report: the mark and its time stay.
        self.apply('compute-1', fpga(0x5f))
        self.assertEqual(device, next(row for row in self.rows('devices')
                                      if row['id'] == device['id']))

        # Back again: the report's own mark is lifted.
        self.apply('compute-1', fpga(0x5e), fpga(0x5f))
        device = next(row for row in self.rows('devices')
                      if row['id'] == device['id'])
        self.assertEqual(('enabled', None),
                         (device['status'], device['status_reason']))

        # Gone once the ARQ let go of it.
        arq.state = 'Unbound'
        arq.save(self.context)
        self.apply('compute-1', fpga(0x5f))
        self.assertEqual(1, len(self.rows('devices')))

    def test_unreported_vf_with_a_bound_arq_is_kept_and_marked(self):
        self.apply('compute-1', fpga(0x5e, vfs=3))
        self.bind('fpga-0000:5e:00.0-vf3', state='BindStarted')

        self.apply('compute-1', fpga(0x5e, vfs=1))

        self.assertEqual(
            ['fpga-0000:5e:00.0-vf1', 'fpga-0000:5e:00.0-vf3'],
            sorted(row['name'] for row in self.rows('deployables')
                   if '-vf' in row['name']))
        self.assertEqual(2, len(self.rows('attach_handles')))
        [device] = self.rows('devices')
        self.assertEqual('maintaining', device['status'])
        self.assertTrue(device['status_reason'].startswith(
            'Deployable fpga-0000:5e:00.0-vf3 not reported by the agent of '
            'compute-1 since '))

    def test_bound_handle_stays_in_use_whatever_the_driver_says(self):
        self.apply('compute-1', fpga(0x5e, vfs=2))
        arq = self.bind('fpga-0000:5e:00.0-vf1')
        with self.database.engine.begin() as connection:
            connection.execute(sa.update(TABLES['attach_handles']).values(
                in_use=True))

        self.apply('compute-1', fpga(0x5e, vfs=2))

        self.assertEqual([True, False], [row['in_use'] for row in
                                         self.rows('attach_handles')])
        arq.state = 'Unbound'
        arq.save(self.context)
        self.apply('compute-1', fpga(0x5e, vfs=2))
        self.assertEqual([False, False], [row['in_use'] for row in
                                          self.rows('attach_handles')])

    def test_disabled_device_stays_maintaining(self):
        self.apply('compute-1', fpga(0x5e))
        with self.database.engine.begin() as connection:
            connection.execute(sa.update(TABLES['devices']).values(
                status='maintaining', status_reason='fan failure'))

        self.apply('compute-1', fpga(0x5e, model='test-fpga-v2', vfs=4))

        [device] = self.rows('devices')
        self.assertEqual(('maintaining', 'fan failure', 'test-fpga-v2'),
                         (device['status'], device['status_reason'],
                          device['model']))


class HostTests(ReconciliationCase):
    """Hosts stay apart, and a malformed report writes nothing."""

    def test_two_hosts_with_identical_output_get_their_own_rows(self):
        self.apply('compute-1', fpga(0x5e))
        self.apply('compute-2', fpga(0x5e))

        one = self.snapshot('compute-1')
        two = self.snapshot('compute-2')
        for name in TABLES:
            self.assertEqual(len(one[name]), len(two[name]), name)
            self.assertFalse({row['id'] for row in one[name]}
                             & {row['id'] for row in two[name]}, name)
        self.assertEqual([row['name'] for row in one['deployables']],
                         [row['name'] for row in two['deployables']])
        rp_uuids = [row['rp_uuid'] for row in one['deployables'] +
                    two['deployables'] if row['rp_uuid']]
        self.assertEqual(2, len(set(rp_uuids)))

    def test_report_of_one_host_never_touches_another(self):
        self.apply('compute-2', fpga(0x5e), fpga(0x5f))
        other = self.snapshot('compute-2')

        self.apply('compute-1', fpga(0x5e))
        self.apply('compute-1', fpga(0x5e, vfs=1, model='changed'))
        self.apply('compute-1')

        self.assertEqual(other, self.snapshot('compute-2'))
        self.assertEqual([], self.rows('devices'))

    def test_malformed_report_writes_nothing(self):
        self.apply('compute-1', fpga(0x5e))
        before = self.snapshot()

        for spoil, problem in reports.MALFORMED:
            # A valid new device comes first: it must not be written either.
            devices = report(fpga(0x60, vfs=1), fpga(0x5e, vfs=5))
            spoil(devices[1])

            error = self.assertRaises(exception.Invalid,
                                      inventory_report.apply, self.context,
                                      'compute-1', devices)

            self.assertIn(problem, str(error))
            self.assertIn('compute-1', str(error))
            self.assertEqual(before, self.snapshot())

        for not_a_report in reports.NOT_REPORTS:
            self.assertRaises(exception.Invalid, inventory_report.apply,
                              self.context, 'compute-1', not_a_report)
        self.assertEqual(before, self.snapshot())


class ReconciliationTests(CreationTests, UpdateTests, RemovalTests,
                          HostTests):
    """All the cases, for a test case that sets ``self.database`` in setUp."""


class TestReconciliationOnSQLite(ReconciliationTests, base.TestCase):

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(database.Database())


def statements_of(database_fixture, context, host, devices):
    """The SQL statements one report of ``devices`` by ``host`` runs."""
    with test_list_statement_counts.counting_statements(
            database_fixture.engine) as statements:
        inventory_report.apply(context, host, report(*devices))
    return statements


def device_ids_of(database_fixture, host):
    """Ids of the device rows of ``host``."""
    devices = TABLES['devices']
    with database_fixture.engine.connect() as connection:
        return connection.execute(sa.select(devices.c.id).where(
            devices.c.hostname == host)).scalars().all()


class StatementCountTests:
    """A report costs the same statements for 1 device or 200.

    For a test case that sets ``self.database`` in setUp.
    """

    def setUp(self):
        super().setUp()
        self.context = cyborg_context.get_admin_context()

    def statements_of(self, host, devices):
        return statements_of(self.database, self.context, host, devices)

    def test_unchanged_report_costs_the_same_for_1_or_200_devices(self):
        one = [fpga(0)]
        many = [fpga(bus) for bus in range(200)]
        self.statements_of('compute-1', one)
        self.statements_of('compute-2', many)

        for_one = self.statements_of('compute-1', one)
        for_many = self.statements_of('compute-2', many)

        self.assertEqual(len(for_one), len(for_many))
        # The host's lock (an upsert of its host_locks row), then one read
        # per table: devices with control paths, deployables, attributes,
        # attach handles; nothing else written.
        self.assertEqual(5, len(for_many), for_many)
        self.assertIn('host_locks', for_many[0])
        self.assertTrue(all(statement.lstrip().upper().startswith('SELECT')
                            for statement in for_many[1:]))

    def test_first_report_costs_the_same_for_2_or_200_devices(self):
        for_two = self.statements_of('compute-1', [fpga(0), fpga(1)])
        for_many = self.statements_of(
            'compute-2', [fpga(bus) for bus in range(200)])

        self.assertEqual(len(for_two), len(for_many))
        # The lock, 4 reads, devices, control paths, 3 deployable levels,
        # 2 attribute levels, attach handles, and the refresh of the
        # deployables' stored attributes_list (one UPDATE, the last).
        self.assertEqual(14, len(for_many), for_many)
        self.assertTrue(for_many[-1].startswith(
            'UPDATE deployables SET attributes_list='), for_many[-1])
        self.assertEqual(200, len(device_ids_of(self.database, 'compute-2')))

    def test_changed_attributes_cost_one_refresh_for_2_or_200_devices(self):
        self.statements_of('compute-1', [fpga(0), fpga(1)])
        self.statements_of('compute-2', [fpga(bus) for bus in range(200)])

        # A nested attribute's value changes (and a top-level one goes).
        changed = {'compute-1': [fpga(0, shell_version='2.0'),
                                 fpga(1, shell_version='2.0')],
                   'compute-2': [fpga(bus, shell_version='2.0')
                                 for bus in range(200)]}
        for devices in changed.values():
            for device in devices:
                del device.deployables[0].children[0].attributes['trait0']
        for_two, for_many = (self.statements_of(host, devices)
                             for host, devices in changed.items())

        self.assertEqual(len(for_two), len(for_many))
        # The lock, 4 reads, the attribute update, the attribute delete and
        # one refresh of every deployable whose attributes changed.
        self.assertEqual(8, len(for_many), for_many)
        refreshes = [statement for statement in for_many
                     if statement.startswith(
                         'UPDATE deployables SET attributes_list=')]
        self.assertEqual([for_many[-1]], refreshes)

    def test_changes_on_200_devices_cost_a_bounded_number(self):
        self.statements_of('compute-1', [fpga(bus) for bus in range(200)])

        changed = self.statements_of(
            'compute-1', [fpga(bus, vfs=2, model='v2', in_use={1})
                          for bus in range(1, 200)])

        # The lock, 4 reads, device, deployable and attribute updates (one
        # per level with changes), in_use, the ARQ check and four deletes.
        self.assertLessEqual(len(changed), 17, changed)
        self.assertEqual(199, len(device_ids_of(self.database, 'compute-1')))


class TestStatementCountsOnSQLite(StatementCountTests, base.TestCase):

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(database.Database())
