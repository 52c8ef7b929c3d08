"""Every object list costs the same number of SQL statements for 1 row or 50."""

import contextlib
import json

import sqlalchemy as sa
from sqlalchemy.engine import interfaces

from cyborg import context as cyborg_context
from cyborg import objects
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.unit.db import records

TRANSACTION_CONTROL = {'BEGIN', 'COMMIT', 'ROLLBACK', 'SAVEPOINT', 'RELEASE'}


@contextlib.contextmanager
def counting_statements(engine, compiled_only=False):
    """Yield a list that collects the SQL statements ``engine`` runs meanwhile
    (``compiled_only``: those SQLAlchemy compiled rather than took from its
    cache).

    Transaction control (the BEGIN oslo.db issues on SQLite) is left out.
    """
    statements = []

    def record(connection, cursor, statement, parameters, context, many):
        if statement.split(None, 1)[0].upper() in TRANSACTION_CONTROL:
            return
        if (not compiled_only
                or context.cache_hit != interfaces.CacheStats.CACHE_HIT):
            statements.append(statement)

    sa.event.listen(engine, 'before_cursor_execute', record)
    try:
        yield statements
    finally:
        sa.event.remove(engine, 'before_cursor_execute', record)


class ListStatementCountTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(database.Database())
        self.context = cyborg_context.get_admin_context()
        self.profile = records.make_device_profile(self.context)
        self.tree = records.DeviceTree(self.context, handles=50)
        self.free_handles = list(self.tree.attach_handles)
        records.make_arq(self.context, self.profile)

    def _add_rows(self, count):
        """Add ``count`` rows to every table the objects list."""
        for _ in range(count):
            device = records.make_device(self.context)
            deployable = records.make_deployable(self.context, device)
            records.make_attribute(self.context, deployable, 'rc', 'FPGA')
            records.make_attribute(self.context, deployable, 'trait0',
                                   'CUSTOM_FAKE_DEVICE')
            records.make_controlpath_id(self.context, device)
            records.make_device_profile(self.context)
        for _ in range(count):
            handle = self.free_handles.pop()
            arq = records.make_arq(self.context, self.profile)
            arq.attach_handle_id = handle.id
            arq.state = 'Bound'
            arq.save(self.context)

    def _statements_per_list(self):
        counts = {}
        for cls in (objects.Device, objects.Deployable, objects.Attribute,
                    objects.ControlpathID, objects.AttachHandle,
                    objects.DeviceProfile, objects.ARQ):
            # Page after the first row, so every page holds rows.
            first = cls.list(self.context, limit=1, sort_key='created_at')[0]
            with counting_statements(self.database.engine) as plain:
                listed = cls.list(self.context)
            with counting_statements(self.database.engine) as paged:
                cls.list(self.context, marker=first.uuid,
                         sort_key='created_at', limit=100)
            counts[cls.obj_name()] = (len(listed), len(plain), len(paged))
        return counts

    def test_fifty_rows_cost_the_statements_of_one(self):
        self._add_rows(1)
        with_one = self._statements_per_list()
        self._add_rows(49)
        with_fifty = self._statements_per_list()

        for name, (rows, plain, paged) in with_fifty.items():
            self.assertGreaterEqual(rows, 50, name)
            self.assertEqual(with_one[name][1:], (plain, paged), name)
            # One query, one more for deployables' attributes and the marker.
            self.assertLessEqual(plain, 2, name)


    def test_row_lists_are_one_statement_whatever_their_length(self):
        # The lists the API renders (rows, no objects): one statement a
        # page, one more for a marker.
        listed = (objects.Device, objects.Deployable, objects.Attribute,
                  objects.DeviceProfile, objects.ARQ)
        counts = {}
        for count in (1, 49):
            self._add_rows(count)
            for cls in listed:
                first = cls.list(self.context, limit=1)[0]
                with counting_statements(self.database.engine) as plain:
                    rows = cls.list_rows(self.context)
                with counting_statements(self.database.engine) as paged:
                    cls.list_rows(self.context, marker=first.uuid, limit=100)
                counts.setdefault(cls.obj_name(), []).append(
                    (len(rows) >= count, len(plain), len(paged)))
        for name, both in counts.items():
            self.assertEqual([(True, 1, 2), (True, 1, 2)], both, name)


    def test_lists_read_again_compile_nothing(self):
        # A statement SQLAlchemy cannot cache is compiled on every call:
        # for a small page, more than the database's whole answer. (A
        # statement built once may be compiled at its first two reads.)
        self._add_rows(2)
        for cls in (objects.Device, objects.Deployable, objects.Attribute,
                    objects.DeviceProfile, objects.ARQ):
            for _ in range(2):
                cls.list_rows(self.context)
            with counting_statements(self.database.engine,
                                     compiled_only=True) as compiled:
                cls.list_rows(self.context)
            self.assertEqual([], compiled, cls.obj_name())
        for nested in (False, True):
            for _ in range(2):
                objects.Attribute.list_trees(self.context)
                objects.Deployable.list_rows(
                    self.context, tree_uuids=nested, nested_attributes=nested)
            with counting_statements(self.database.engine,
                                     compiled_only=True) as compiled:
                objects.Attribute.list_trees(self.context)
                objects.Deployable.list_rows(self.context, tree_uuids=nested,
                                             nested_attributes=nested)
            self.assertEqual([], compiled)


class TreeStatementCountTest(base.TestCase):
    """Microversion 2.4's reads of nested attributes and deployable trees
    cost the same statements for one tree or fifty, shallow or deep."""

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(database.Database())
        self.context = cyborg_context.get_admin_context()
        self.root = records.make_deployable(
            self.context, records.make_device(self.context))
        self.deployables = []

    def _add_trees(self, count, depth):
        """``count`` deployables under the root, each with ``rc`` and a
        ``board`` attribute holding two chains ``depth`` levels deep."""
        for _ in range(count):
            deployable = records.make_deployable(
                self.context, records.make_device(self.context),
                parent_id=self.root.id, root_id=self.root.id)
            records.make_attribute(self.context, deployable, 'rc', 'FPGA')
            board = records.make_attribute(self.context, deployable, 'board',
                                           None)
            for chain in ('a', 'b'):
                parent = board
                for level in range(depth):
                    parent = records.make_attribute(
                        self.context, deployable, '%s%d' % (chain, level),
                        'v', parent_attribute_id=parent.id)
            self.deployables.append(deployable)

    def _reads(self):
        """{read: (rows read, statements)} of every 2.4 tree read."""
        deployable = self.deployables[0]
        # The first by key (a board), so that every page after it holds rows.
        first_top = objects.Attribute.list_trees(self.context, limit=1,
                                                 sort_key='key')[0]
        reads = {
            'Attribute.list_trees': lambda: objects.Attribute.list_trees(
                self.context),
            'Attribute.list_trees paged': lambda: objects.Attribute.list_trees(
                self.context, marker=first_top.row.uuid, sort_key='key',
                limit=1000),
            'Attribute.get_tree': lambda: [objects.Attribute.get_tree(
                self.context, first_top.row.uuid)],
            'Attribute.trees_of_deployable':
                lambda: objects.Attribute.trees_of_deployable(
                    self.context, deployable.uuid),
            'Attribute.trees_of_deployable key':
                lambda: objects.Attribute.trees_of_deployable(
                    self.context, deployable.uuid, key='board'),
            'Deployable.list_rows tree': lambda: objects.Deployable.list_rows(
                self.context, tree_uuids=True, nested_attributes=True,
                programmed=False),
            'Deployable.get_row tree': lambda: [objects.Deployable.get_row(
                self.context, deployable.uuid, tree_uuids=True,
                nested_attributes=True)],
        }
        counts = {}
        for name, read in reads.items():
            with counting_statements(self.database.engine) as statements:
                found = read()
            counts[name] = (len(found), len(statements))
        return counts

    def test_deeper_and_more_trees_cost_no_more_statements(self):
        # A page costs one statement more when something is nested under
        # it (the recursive query), so both sizes have nesting in every
        # page read.
        self._add_trees(2, depth=1)
        with_two = self._reads()
        self._add_trees(48, depth=4)
        with_fifty = self._reads()

        self.assertEqual(2 * 50, with_fifty['Attribute.list_trees'][0])
        self.assertEqual(51, with_fifty['Deployable.list_rows tree'][0])
        for name, (_, statements) in with_fifty.items():
            self.assertEqual(with_two[name][1], statements, name)
            # The rows asked for and everything nested under them; one
            # more for a marker.
            self.assertLessEqual(statements, 3 if 'paged' in name else 2,
                                 name)

    def test_a_page_with_nothing_nested_is_one_statement(self):
        for _ in range(3):
            deployable = records.make_deployable(
                self.context, records.make_device(self.context))
            records.make_attribute(self.context, deployable, 'rc', 'FPGA')
        reads = {
            'Attribute.list_trees': lambda: objects.Attribute.list_trees(
                self.context),
            'Deployable.list_rows tree': lambda: objects.Deployable.list_rows(
                self.context, tree_uuids=True, nested_attributes=True),
        }
        for name, read in reads.items():
            with counting_statements(self.database.engine) as statements:
                found = read()
            self.assertEqual(4 if 'Deployable' in name else 3, len(found),
                             name)
            self.assertEqual(1, len(statements), name)

    def test_every_nested_attribute_is_read(self):
        self._add_trees(2, depth=3)
        deployable = self.deployables[1]

        trees = objects.Attribute.trees_of_deployable(self.context,
                                                      deployable.uuid)
        _, attributes_list = objects.Deployable.get_row(
            self.context, deployable.uuid, nested_attributes=True)

        self.assertEqual(['rc', 'board'], [tree.row.key for tree in trees])
        chain = trees[1].children[0]
        self.assertEqual(trees[1].row.uuid, chain.parent_uuid)
        keys = []
        while chain is not None:
            keys.append(chain.row.key)
            chain = chain.children[0] if chain.children else None
        self.assertEqual(['a0', 'a1', 'a2'], keys)
        self.assertEqual(
            [{'rc': 'FPGA'},
             {'board': {'a0': {'a1': {'a2': 'v'}}, 'b0': {'b1': {'b2': 'v'}}}}],
            json.loads(attributes_list))
