"""A report keeps an adopted deployable its driver names differently.

``report_adoption``'s rule, on SQLite: an adopted deployable (one with a
provider name, as ``cyborg-dbsync import-upstream`` leaves it) that no
reported deployable names is the reported deployable with exactly its
attach handles; one without a provider name is not.
"""

import types

import sqlalchemy as sa

from cyborg import context as cyborg_context
from cyborg.conductor import inventory_report
from cyborg.conductor import report_adoption
from cyborg.conductor import report_validation
from cyborg.db import models
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.unit.conductor import reports

HOST = 'host-a'
DEPLOYABLES = models.Deployable.__table__


class ReportAdoptionTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(database.Database())
        self.context = cyborg_context.get_admin_context()
        inventory_report.apply(self.context, HOST, reports.report(
            reports.fpga(0x5e, vfs=2)))

    def _by_name(self):
        with self.database.engine.connect() as connection:
            return {row.name: row for row in connection.execute(
                sa.select(DEPLOYABLES))}

    def _rename(self, name, new_name, provider_name):
        with self.database.engine.begin() as connection:
            connection.execute(sa.update(DEPLOYABLES).where(
                DEPLOYABLES.c.name == name).values(
                name=new_name, provider_name=provider_name))

    def test_adopted_deployable_kept_under_the_reported_name(self):
        before = self._by_name()
        vf1 = 'fpga-0000:5e:00.0-vf1'
        self._rename(vf1, '%s_0000:5e:00.1' % HOST, '%s_0000:5e:00.1' % HOST)
        inventory_report.apply(self.context, HOST, reports.report(
            reports.fpga(0x5e, vfs=2)))
        after = self._by_name()
        self.assertEqual(set(before), set(after))
        self.assertEqual((before[vf1].id, before[vf1].uuid,
                          '%s_0000:5e:00.1' % HOST),
                         (after[vf1].id, after[vf1].uuid,
                          after[vf1].provider_name))

    def test_deployable_of_ours_is_replaced(self):
        before = self._by_name()
        vf1 = 'fpga-0000:5e:00.0-vf1'
        self._rename(vf1, 'renamed', None)
        inventory_report.apply(self.context, HOST, reports.report(
            reports.fpga(0x5e, vfs=2)))
        after = self._by_name()
        self.assertNotIn('renamed', after)
        self.assertNotEqual(before[vf1].uuid, after[vf1].uuid)

    def test_only_one_to_one_pairs(self):
        # As validated reports hold them: the info as canonical JSON text.
        info = report_validation.canonical_json(reports.pci(1))
        handle = types.SimpleNamespace(attach_type='PCI', attach_info=info)
        rows = [{'id': 1, 'name': 'a'}, {'id': 2, 'name': 'b'},
                {'id': 3, 'name': 'c'}]
        stored = {1: frozenset({('PCI', info)}), 2: frozenset({('PCI', info)}),
                  3: frozenset()}
        twin = types.SimpleNamespace(name='x', attach_handles=[handle])
        bare = types.SimpleNamespace(name='y', attach_handles=[])
        # Two stored deployables with the same handles: neither is taken.
        self.assertEqual([], report_adoption._pairs(rows, [twin, bare],
                                                    stored))
        # One: it is; one without handles never is.
        self.assertEqual([(rows[0], twin)], report_adoption._pairs(
            rows[::2], [twin, bare], stored))
