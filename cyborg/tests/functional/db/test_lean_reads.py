"""Every list page read again runs on the DBAPI cursor (``lean.read``),
with the rows SQLAlchemy itself gives, on SQLite, MariaDB and PostgreSQL.

``lean.read`` leans on attributes of SQLAlchemy's that are not public: an
upgrade that changes them makes these tests fail instead of every list
silently taking the slower path.
"""

from unittest import mock

import sqlalchemy as sa

from cyborg import context as cyborg_context
from cyborg import objects
from cyborg.db.queries import attributes as attribute_queries
from cyborg.db.queries import lean
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.unit.db import records


def _lists(context, first_uuids, plain=False):
    """Name -> a call of each list page the API reads, returning the
    page's rows (with ``plain``, as the API reads them: a ``lean.Page``)."""
    def pairs_rows(pairs):
        rows = [row for row, _ in pairs]
        return lean.Page(rows, pairs.fields) if plain else rows

    return {
        'devices': lambda: objects.Device.list_rows(context, plain=plain),
        'devices after a marker': lambda: objects.Device.list_rows(
            context, marker=first_uuids['device'], limit=10, plain=plain),
        'devices by host': lambda: objects.Device.list_rows(
            context, filters={'hostname': 'compute-1'}, plain=plain),
        'deployables': lambda: pairs_rows(
            objects.Deployable.list_rows(context, plain=plain)),
        'deployables 2.4': lambda: pairs_rows(objects.Deployable.list_rows(
            context, tree_uuids=True, nested_attributes=True, plain=plain)),
        'attributes': lambda: objects.Attribute.list_rows(context,
                                                          plain=plain),
        'attributes 2.4': lambda: (
            attribute_queries.list_top_level_with_descendants(
                context, plain=plain)[0]),
        'device profiles': lambda: objects.DeviceProfile.list_rows(
            context, plain=plain),
        'ARQs': lambda: objects.ARQ.list_rows(context, plain=plain),
    }


class LeanReadsTestMixin:

    backend = None

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(database.Database(self.backend))
        self.context = cyborg_context.get_admin_context()
        profile = records.make_device_profile(self.context)
        tree = records.DeviceTree(self.context, handles=2)
        for _ in range(3):
            device = records.make_device(self.context)
            deployable = records.make_deployable(self.context, device)
            records.make_attribute(self.context, deployable, 'rc', 'FPGA')
        arq = records.make_arq(self.context, profile)
        arq.attach_handle_id = tree.attach_handles[0].id
        arq.state = 'Bound'
        arq.save(self.context)
        self.first_uuids = {
            'device': objects.Device.list(self.context, limit=1)[0].uuid}

    def _read_three_times(self, name, read):
        """(first page, third page) of ``read``, asserting that the third
        read ran its page on the cursor, not through SQLAlchemy."""
        execute = sa.engine.Connection.execute
        # SQLAlchemy may compile a statement built once at each of its
        # first two reads (test_list_statement_counts).
        first = read()
        read()
        with mock.patch.object(sa.engine.Connection, 'execute',
                               autospec=True,
                               side_effect=execute) as executed:
            again = read()
        # Only the marker's own lookup (rows._after_marker) is not a
        # page: SQLAlchemy runs it (and oslo.db's BEGIN on SQLite).
        statements = [
            call.args[1] for call in executed.call_args_list
            if getattr(call.args[1], 'text', None) != 'BEGIN']
        self.assertEqual(1 if 'marker' in name else 0, len(statements),
                         '%s: %s' % (name, statements))
        return first, again

    def test_a_page_read_again_runs_on_the_cursor_with_the_same_rows(self):
        for name, read in _lists(self.context, self.first_uuids).items():
            first, again = self._read_three_times(name, read)
            self.assertTrue(again, name)
            self.assertEqual(first, again, name)
            for before, after in zip(first, again, strict=True):
                self.assertIsInstance(after, sa.engine.Row, name)
                self.assertEqual(before._fields, after._fields, name)

    def test_a_plain_page_holds_the_same_values_as_tuples(self):
        # What the API lists read: the driver's tuples, no Row per row, the
        # columns named once on the page.
        lists = _lists(self.context, self.first_uuids)
        for name, read in _lists(self.context, self.first_uuids,
                                 plain=True).items():
            rows = lists[name]()
            first, again = self._read_three_times(name, read)
            self.assertTrue(rows, name)
            for page in first, again:
                self.assertIsInstance(page, lean.Page, name)
                self.assertEqual(rows[0]._fields, page.fields, name)
                self.assertEqual([tuple(row) for row in rows],
                                 [tuple(row) for row in page], name)
            self.assertEqual({tuple}, {type(row) for row in again}, name)
            named = again.named()
            self.assertEqual(
                [row.uuid for row in rows], [row.uuid for row in named],
                name)
            self.assertEqual(rows[0]._fields, named[0]._fields, name)

    def test_expanding_parameters_are_left_to_sqlalchemy(self):
        # An IN list is expanded when SQLAlchemy runs the statement: never
        # on the cursor, however often it is read.
        query = sa.select(sa.literal_column('3').label('three')).where(
            sa.literal_column('3').in_([1, 2, 3]))
        execute = sa.engine.Connection.execute
        with self.database.engine.connect() as connection:
            for _ in range(2):
                lean.read(connection, query)
            with mock.patch.object(sa.engine.Connection, 'execute',
                                   autospec=True,
                                   side_effect=execute) as executed:
                page = lean.read(connection, query)
                plain = lean.read(connection, query, plain=True)
        self.assertEqual(2, executed.call_count)
        self.assertEqual([(3,)], [tuple(row) for row in page])
        self.assertEqual((('three',), [(3,)]),
                         (plain.fields, [tuple(row) for row in plain]))


class SQLiteLeanReadsTest(LeanReadsTestMixin, base.TestCase):
    backend = 'sqlite'


class MySQLLeanReadsTest(LeanReadsTestMixin, base.TestCase):
    backend = 'mysql'


class PostgreSQLLeanReadsTest(LeanReadsTestMixin, base.TestCase):
    backend = 'postgresql'
