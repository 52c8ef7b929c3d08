"""cyborg-dbsync import-upstream against a real OpenStack Cyborg database.

The source is built by openstack-cyborg 17.0.0's own migrations on
MariaDB and filled as its services would have left a host
(``upstream_sample``); the target is this service's schema at head on
MariaDB. The command runs as a process once (its wiring and output), the
other cases call ``cyborg.upstream.importing`` in the test's process.
"""

import json
import os
import subprocess
import sys

import fixtures
import sqlalchemy as sa

from cyborg.common import vocabulary
from cyborg.db import migration
from cyborg.db import models
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.fixtures import upstream_cyborg
from cyborg.tests.functional.db import upstream_sample
from cyborg.upstream import importing
from cyborg.upstream import source
from cyborg.upstream import writing


def dump(engine):
    """Every row of every table of the target, in key order."""
    with engine.connect() as connection:
        return {table.name: [tuple(row) for row in connection.execute(
            sa.select(table).order_by(*table.primary_key.columns))]
            for table in models.Base.metadata.sorted_tables}


class ImportUpstreamTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.upstream = self.useFixture(upstream_cyborg.UpstreamDatabase())
        self.sample = upstream_sample.fill(self.upstream)
        self.target = self.useFixture(database.Database('mysql'))
        self.printed = []

    def _import(self, dry_run=False):
        return importing.run(self.upstream.url, dry_run=dry_run,
                             out=self.printed.append)

    def _rows(self, table, *where):
        model = models.Base.metadata.tables[table]
        with self.target.engine.connect() as connection:
            return {row.uuid: row for row in connection.execute(
                sa.select(model).where(*where))}

    def _uuid(self, role):
        return self.sample.uuids[role]

    def test_command_imports_and_says_what(self):
        config = os.path.join(self.useFixture(fixtures.TempDir()).path,
                              'cyborg.conf')
        with open(config, 'w') as out:
            out.write('[database]\nconnection = %s\n' % self.target.url)
        command = [sys.executable, '-c',
                   'import sys; from cyborg.cmd import dbsync; '
                   'sys.exit(dbsync.main())', '--config-file', config,
                   'import-upstream', '--from', self.upstream.url]
        result = subprocess.run(command, capture_output=True, text=True,
                                timeout=120, check=False)
        self.assertEqual(0, result.returncode, result.stderr)
        lines = result.stdout.splitlines()
        self.assertEqual('Source: OpenStack Cyborg database at revision '
                         '%s.' % source.HEAD, lines[0])
        self.assertIn('devices: 2 inserted, 0 already there, 1 not carried '
                      'over', lines)
        self.assertIn('extended_accelerator_requests: 4 inserted, 0 already '
                      'there, 2 not carried over', lines)
        self.assertIn('Imported 21 rows in one transaction.', lines)

        result = subprocess.run(command + ['--dry-run'], capture_output=True,
                                text=True, timeout=120, check=False)
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertIn('Nothing to do: every row that can be carried over is '
                      'in the target already.', result.stdout)

        # Refused: exit 2, the reason on standard error, nothing written.
        before = dump(self.target.engine)
        command[command.index(self.upstream.url)] = 'nonsense://x'
        result = subprocess.run(command, capture_output=True, text=True,
                                timeout=120, check=False)
        self.assertEqual(2, result.returncode, result.stderr)
        self.assertIn('Import refused: Cannot use the source database URL',
                      result.stderr)
        self.assertEqual(before, dump(self.target.engine))

    def test_everything_carried_with_its_uuid(self):
        self._import()
        devices = self._rows('devices')
        self.assertEqual({self._uuid('fpga'), self._uuid('gpu')},
                         set(devices))
        self.assertEqual(vocabulary.DeviceStatus.MAINTAINING,
                         devices[self._uuid('gpu')].status)
        self.assertEqual(vocabulary.DeviceStatus.ENABLED,
                         devices[self._uuid('fpga')].status)
        self.assertEqual(upstream_sample.CREATED,
                         devices[self._uuid('fpga')].created_at)

        deployables = self._rows('deployables')
        fpga = deployables[self._uuid('fpga_dep')]
        self.assertEqual((self.sample.fpga_name, self.sample.fpga_rp,
                          self.sample.fpga_name, 2),
                         (fpga.name, fpga.rp_uuid, fpga.provider_name,
                          fpga.num_accelerators))
        root = deployables[self._uuid('gpu_root')]
        child = deployables[self._uuid('gpu_dep')]
        self.assertEqual((root.id, root.id), (child.parent_id, child.root_id))
        self.assertIsNone(root.provider_name)
        self.assertEqual(self.sample.gpu_name, child.provider_name)
        self.assertEqual('[{"rc": "FPGA"}, {"trait0": "CUSTOM_FAKE_DEVICE"}, '
                         '{"trait1": "CUSTOM_FPGA_ARRIA10"}]',
                         fpga.attributes_list)

        handles = self._rows('attach_handles')
        self.assertEqual(
            {self._uuid('fpga_ah0'): True, self._uuid('fpga_ah1'): False,
             self._uuid('gpu_ah'): False},
            {row_uuid: row.in_use for row_uuid, row in handles.items()})

        profiles = self._rows('device_profiles')
        self.assertEqual({self._uuid('fpga_profile'),
                          self._uuid('gpu_profile')}, set(profiles))
        profile = profiles[self._uuid('fpga_profile')]
        self.assertEqual(('fpga-1', 'the fpga-1 profile',
                          [{'resources:FPGA': '1',
                            'trait:CUSTOM_FAKE_DEVICE': 'required'}],
                          upstream_sample.CREATED),
                         (profile.name, profile.description,
                          json.loads(profile.profile_json),
                          profile.created_at))
        self._assert_arqs(handles, deployables, profiles)

    def _assert_arqs(self, handles, deployables, profiles):
        arqs = self._rows('extended_accelerator_requests')
        self.assertEqual({self._uuid(role) for role in (
            'bound', 'initial', 'failed', 'unbound')}, set(arqs))
        bound = arqs[self._uuid('bound')]
        self.assertEqual(
            ('Bound', self._uuid('instance'), 'compute-1',
             self.sample.fpga_rp, handles[self._uuid('fpga_ah0')].id,
             deployables[self._uuid('fpga_dep')].id,
             profiles[self._uuid('fpga_profile')].id, 'project-a'),
            (bound.state, bound.instance_uuid, bound.hostname,
             bound.device_rp_uuid, bound.attach_handle_id,
             bound.deployable_id, bound.device_profile_id, bound.project_id))
        self.assertEqual(
            {'Initial', 'BindFailed', 'Unbound', 'Bound'},
            {row.state for row in arqs.values()})
        self.assertIsNone(bound.bind_owner)

    def test_rows_not_carried_are_named_with_why(self):
        self._import(dry_run=True)
        text = '\n'.join(self.printed)
        for role, why in (
                ('nvme', "its type 'NVME' is not one this service knows"),
                ('nvme_dep', 'its device (upstream id'),
                ('nvme_ah', 'its deployable (upstream id'),
                ('bad_profile', 'its groups are not a list of '
                                'string-to-string maps'),
                ('on_bad', 'its device profile (upstream id')):
            self.assertIn(' %s: %s' % (self._uuid(role), why), text)
        self.assertRegex(text, r' %s: its device profile \(upstream id \d+\) '
                         r'is gone' % self._uuid('on_gone'))
        self.assertIn('Dry run: nothing was written.', self.printed)
        self.assertIn('device_profiles: 2 to insert, 0 already there, 1 not '
                      'carried over', self.printed)

    def test_dry_run_and_second_run_change_nothing(self):
        empty = dump(self.target.engine)
        self._import(dry_run=True)
        self.assertEqual(empty, dump(self.target.engine))
        self._import()
        imported = dump(self.target.engine)
        self.assertNotEqual(empty, imported)
        self.printed.clear()
        comparison = self._import()
        self.assertTrue(comparison.nothing_to_do())
        self.assertEqual(imported, dump(self.target.engine))
        self.assertIn('Nothing to do: every row that can be carried over is '
                      'in the target already.', self.printed)

    def test_failure_part_way_leaves_the_target_untouched(self):
        empty = dump(self.target.engine)
        insert = writing._insert

        def failing(context, table, rows):
            if table == 'extended_accelerator_requests':
                raise RuntimeError('injected failure')
            return insert(context, table, rows)

        self.useFixture(fixtures.MonkeyPatch(
            'cyborg.upstream.writing._insert', failing))
        self.assertRaisesRegex(RuntimeError, 'injected', self._import)
        self.assertEqual(empty, dump(self.target.engine))

    def test_conflicting_rows_refused_by_name(self):
        self._import()
        profiles = models.DeviceProfile.__table__
        with self.target.engine.begin() as connection:
            connection.execute(sa.update(profiles).where(
                profiles.c.uuid == self._uuid('gpu_profile')).values(
                description='changed since'))
            connection.execute(sa.update(profiles).where(
                profiles.c.uuid == self._uuid('fpga_profile')).values(
                uuid='11111111-2222-3333-4444-555555555555'))
            handles = models.AttachHandle.__table__
            deployables = models.Deployable.__table__
            connection.execute(sa.update(handles).where(
                handles.c.uuid == self._uuid('fpga_ah1')).values(
                deployable_id=sa.select(deployables.c.id).where(
                    deployables.c.uuid == self._uuid('gpu_dep'))
                .scalar_subquery()))
        before = dump(self.target.engine)
        error = self.assertRaises(importing.Refused, self._import)
        self.assertIn('device_profiles %s: the target\'s row differs in '
                      'description' % self._uuid('gpu_profile'), str(error))
        self.assertIn('attach_handles %s: the target\'s row differs in '
                      'deployable_id' % self._uuid('fpga_ah1'), str(error))
        self.assertIn("device_profiles %s: its name 'fpga-1' is taken by the "
                      "target's profile 11111111-2222-3333-4444-555555555555"
                      % self._uuid('fpga_profile'), str(error))
        self.assertEqual(before, dump(self.target.engine))

    def test_target_must_be_at_head(self):
        self.useFixture(fixtures.MockPatch(
            'cyborg.db.migration.current_revision', return_value='9c4e1a7f3b25'))
        error = self.assertRaises(importing.Refused, self._import)
        self.assertIn('at revision 9c4e1a7f3b25, not at this service\'s head '
                      '%s' % migration.head_revision(), str(error))


class OlderUpstreamTest(base.TestCase):

    def test_revision_without_device_status_is_refused(self):
        upstream = self.useFixture(
            upstream_cyborg.UpstreamDatabase(revision='4cc1d79978fc'))
        self.useFixture(database.Database('mysql'))
        error = self.assertRaises(importing.Refused, importing.run,
                                  upstream.url, out=lambda line: None)
        self.assertIn('at OpenStack Cyborg revision 4cc1d79978fc, older than '
                      '6c77bd6afea5', str(error))

    def test_oldest_accepted_revision_imports(self):
        upstream = self.useFixture(
            upstream_cyborg.UpstreamDatabase(revision=source.OLDEST))
        upstream_sample.fill(upstream, third_type='SSD')
        self.useFixture(database.Database('mysql'))
        printed = []
        importing.run(upstream.url, out=printed.append)
        # The SSD is carried too: 4 rows more than test_command's 21.
        self.assertIn('Imported 25 rows in one transaction.', printed)
        self.assertIn('devices: 3 inserted, 0 already there, 0 not carried '
                      'over', printed)


class TargetBackendsTest(base.TestCase):
    """The import writes the same rows into SQLite and PostgreSQL."""

    def _import_twice(self, backend):
        upstream = self.useFixture(upstream_cyborg.UpstreamDatabase())
        sample = upstream_sample.fill(upstream)
        target = self.useFixture(database.Database(backend))
        printed = []
        importing.run(upstream.url, out=printed.append)
        self.assertIn('Imported 21 rows in one transaction.', printed)
        imported = dump(target.engine)
        self.assertTrue(importing.run(upstream.url,
                                      out=printed.append).nothing_to_do())
        self.assertEqual(imported, dump(target.engine))
        with target.engine.connect() as connection:
            arqs = models.ARQ.__table__
            handles = models.AttachHandle.__table__
            held = connection.execute(sa.select(handles.c.uuid).join(
                arqs, arqs.c.attach_handle_id == handles.c.id).where(
                arqs.c.uuid == sample.uuids['bound'])).scalar()
        self.assertEqual(sample.uuids['fpga_ah0'], held)

    def test_sqlite(self):
        self._import_twice('sqlite')

    def test_postgresql(self):
        self._import_twice('postgresql')
