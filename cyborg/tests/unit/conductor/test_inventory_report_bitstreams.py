"""A report brings a deployable's bitstream_id in step with its device.

Whichever way they differ: a device holding an image the database lost
track of has it recorded; a device that ``reports_bitstreams`` and came
back blank has the record cleared, with its function and programmed tree.
``BitstreamTests`` holds the cases; this module runs them on SQLite and
``cyborg/tests/functional/db/test_inventory_report_bitstreams.py`` on
MariaDB and PostgreSQL.
"""

import datetime

import fixtures
import sqlalchemy as sa

from cyborg import context as cyborg_context
from cyborg import exception
from cyborg.conductor import inventory_report
from cyborg.db.queries import inventory as inventory_queries
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.unit.conductor import test_inventory_report as cases

IMAGE = 'e1a5b2c3-0000-4000-8000-000000000001'
OTHER_IMAGE = 'e1a5b2c3-0000-4000-8000-000000000002'
CARD = 'fpga-0000:5e:00.0'
REGION = CARD + '-region0'
FUNCTION_TRAIT = 'CUSTOM_FPGA_FUNCTION_ID_A1B2'


def card(image=None, vfs=3, reports_bitstreams=True):
    """A card whose region holds ``image`` (and then its function trait
    and ``vfs`` VFs), or nothing (one VF, as blank)."""
    device = cases.fpga(0x5e, vfs=vfs if image else 1)
    device.reports_bitstreams = reports_bitstreams
    if image:
        region = device.deployables[0].children[0]
        region.attributes.update(bitstream_id=image, trait1=FUNCTION_TRAIT,
                                 function_name='aes')
    return device


class BitstreamTests:
    """The cases, for a test case that sets ``self.database`` in setUp."""

    # The helpers of the reconciliation's own cases.
    apply = cases.ReconciliationCase.apply
    rows = cases.ReconciliationCase.rows
    snapshot = cases.ReconciliationCase.snapshot
    deployable = cases.ReconciliationCase.deployable
    bind = cases.ReconciliationCase.bind

    def setUp(self):
        super().setUp()
        self.context = cyborg_context.get_admin_context()
        self.logs = self.useFixture(fixtures.FakeLogger(
            name='cyborg.conductor'))

    def record(self, image, name=REGION, **columns):
        """Write ``image`` as the deployable's record, as programming does."""
        deployables = cases.TABLES['deployables']
        with self.database.engine.begin() as connection:
            connection.execute(sa.update(deployables).where(
                deployables.c.name == name).values(bitstream_id=image,
                                                   **columns))

    def region_state(self):
        """(bitstream_id, attribute keys, deployable names below it)."""
        region = self.deployable(REGION)
        keys = sorted(row['key'] for row in self.rows('attributes')
                      if row['deployable_id'] == region['id'])
        below = sorted(row['name'] for row in self.rows('deployables')
                       if row['parent_id'] == region['id'])
        return region['bitstream_id'], keys, below

    def test_the_image_a_device_reports_is_recorded(self):
        self.apply('compute-1', card(IMAGE))
        self.assertEqual(IMAGE, self.deployable(REGION)['bitstream_id'])

        # The database lost track of it (or recorded another image).
        for recorded in (None, OTHER_IMAGE):
            self.record(recorded)

            self.apply('compute-1', card(IMAGE))

            self.assertEqual(IMAGE, self.deployable(REGION)['bitstream_id'])
        self.assertIn('holds image %s, as its host reports (recorded: %s)'
                      % (IMAGE, OTHER_IMAGE), self.logs.output)

    def test_a_blank_device_clears_the_record_function_and_tree(self):
        self.apply('compute-1', card(IMAGE))
        programmed = self.region_state()
        self.assertEqual(
            (IMAGE, ['bitstream_id', 'function_name', 'rc', 'trait0',
                     'trait1'], [CARD + '-vf%d' % vf
                                 for vf in (1, 2, 3)]), programmed)

        self.apply('compute-1', card())

        self.assertEqual((None, ['rc', 'trait0'], [CARD + '-vf1']),
                         self.region_state())
        self.assertEqual(1, len(self.rows('attach_handles')))
        [device] = self.rows('devices')
        self.assertEqual(('enabled', None),
                         (device['status'], device['status_reason']))
        self.assertIn('no longer holds image %s, its host reports; the '
                      'image is no longer recorded' % IMAGE,
                      self.logs.output)

    def test_a_record_the_device_never_reported_is_cleared(self):
        # Programming recorded it, then the card was power cycled before
        # the agent reported it.
        self.apply('compute-1', card())
        self.record(IMAGE)

        self.apply('compute-1', card())

        self.assertIsNone(self.deployable(REGION)['bitstream_id'])

    def test_a_driver_that_cannot_tell_keeps_the_record(self):
        self.apply('compute-1', card(reports_bitstreams=False))
        self.record(IMAGE)

        self.apply('compute-1', card(reports_bitstreams=False))

        self.assertEqual(IMAGE, self.deployable(REGION)['bitstream_id'])
        # What it does report is recorded all the same.
        self.apply('compute-1', card(OTHER_IMAGE, reports_bitstreams=False))
        self.assertEqual(OTHER_IMAGE,
                         self.deployable(REGION)['bitstream_id'])

    def test_a_region_being_programmed_keeps_its_record(self):
        self.apply('compute-1', card(IMAGE))
        now = datetime.datetime.now(datetime.timezone.utc).replace(
            tzinfo=None)
        self.record(OTHER_IMAGE, programming_owner='conductor/1/x',
                    programming_expires_at=now + datetime.timedelta(
                        minutes=5))

        self.apply('compute-1', card())

        self.assertEqual(OTHER_IMAGE, self.deployable(REGION)['bitstream_id'])
        # Once the lock has expired, the device is the truth again.
        self.record(OTHER_IMAGE, programming_expires_at=now -
                    datetime.timedelta(minutes=5))
        self.apply('compute-1', card())
        self.assertIsNone(self.deployable(REGION)['bitstream_id'])

    def test_a_programming_recorded_during_the_report_stands(self):
        # The report reads the region while its programming lock is held;
        # the programming records its image and frees the lock before the
        # report writes the region's other columns (the new VFs). The
        # report must not write back the image it read.
        self.apply('compute-1', card())
        now = datetime.datetime.now(datetime.timezone.utc).replace(
            tzinfo=None)
        self.record(None, programming_owner='conductor/1/x',
                    programming_expires_at=now + datetime.timedelta(
                        minutes=5))
        update_rows = inventory_queries.update_rows
        deployables = cases.TABLES['deployables']
        finished = []

        def programming_finishes_first(context, table, rows, **kwargs):
            # Once, just before the UPDATE that writes the region.
            if table is inventory_queries.Deployable and rows and \
                    not finished:
                finished.append(True)
                context.session.connection().execute(
                    sa.update(deployables).where(
                        deployables.c.name == REGION).values(
                        bitstream_id=IMAGE, programming_owner=None,
                        programming_expires_at=None))
            return update_rows(context, table, rows, **kwargs)

        self.useFixture(fixtures.MonkeyPatch(
            'cyborg.db.queries.inventory.update_rows',
            programming_finishes_first))
        # Programmed, the region offers 3 VFs instead of 1: its row changes.
        self.apply('compute-1', card(IMAGE))

        self.assertEqual(IMAGE, self.deployable(REGION)['bitstream_id'])

    def test_a_bound_region_that_came_back_blank(self):
        self.apply('compute-1', card(IMAGE))
        vf_arq = self.bind(CARD + '-vf3')
        region_arq = self.bind(REGION, handle=False)
        self.bind(CARD + '-vf1', state='Unbound')

        self.apply('compute-1', card())

        # The record goes (a later bind programs again), the rows the ARQ
        # holds stay, the device is marked and the ARQs are named.
        region, keys, below = self.region_state()
        self.assertIsNone(region)
        self.assertEqual(['rc', 'trait0'], keys)
        self.assertEqual([CARD + '-vf1', CARD + '-vf3'], below)
        [device] = self.rows('devices')
        self.assertEqual('maintaining', device['status'])
        self.assertIn('no longer holds image %s, its host reports, although '
                      'accelerator requests %s are bound to it'
                      % (IMAGE, ', '.join(sorted([region_arq.uuid,
                                                  vf_arq.uuid]))),
                      self.logs.output)

    def test_an_unchanged_programmed_report_writes_nothing(self):
        self.apply('compute-1', card(IMAGE))
        before = self.snapshot()

        statements = cases.statements_of(self.database, self.context,
                                         'compute-1', [card(IMAGE)])

        self.assertEqual(before, self.snapshot())
        self.assertEqual(5, len(statements), statements)

    def test_a_bitstream_id_that_does_not_fit_is_refused(self):
        self.apply('compute-1', card())
        before = self.snapshot()
        for value in ('x' * 37, '', 7, {'id': IMAGE}):
            device = card(IMAGE)
            device.deployables[0].children[0].attributes['bitstream_id'] = \
                value

            error = self.assertRaises(exception.Invalid, self.apply,
                                      'compute-1', device)

            self.assertIn("attribute 'bitstream_id' must be a Glance image "
                          "id", str(error))
            self.assertEqual(before, self.snapshot())

    def test_a_flag_that_is_not_a_boolean_is_refused(self):
        self.apply('compute-1', card())
        before = self.snapshot()
        primitives = cases.report(card())
        primitives[0]['reports_bitstreams'] = 'yes'

        error = self.assertRaises(exception.Invalid, inventory_report.apply,
                                  self.context, 'compute-1', primitives)

        self.assertIn("'reports_bitstreams' must be a boolean", str(error))
        self.assertEqual(before, self.snapshot())

    def test_an_agent_without_the_flag_is_understood(self):
        self.apply('compute-1', card())
        self.record(IMAGE)
        primitives = cases.report(card())
        del primitives[0]['reports_bitstreams']

        inventory_report.apply(self.context, 'compute-1', primitives)

        self.assertEqual(IMAGE, self.deployable(REGION)['bitstream_id'])


class TestBitstreamsOnSQLite(BitstreamTests, base.TestCase):

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(database.Database())
