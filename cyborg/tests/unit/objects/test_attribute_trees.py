"""Attribute trees of a page: made on demand when nothing is nested; the
page finds what has children through the index."""

from cyborg import context as cyborg_context
from cyborg import objects
from cyborg.db.queries import attributes as attribute_queries
from cyborg.objects import attribute as attribute_objects
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.unit.db import records


class AttributeTreesTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(database.Database())
        self.context = cyborg_context.get_admin_context()
        self.deployable = records.make_deployable(
            self.context, records.make_device(self.context))
        self.attributes = [
            records.make_attribute(self.context, self.deployable, key, value)
            for key, value in (('rc', 'FPGA'), ('trait0', 'CUSTOM_A'),
                               ('trait1', 'CUSTOM_B'))]

    def _uuids(self, trees):
        return [tree.row.uuid for tree in trees]

    def test_a_flat_page_is_a_sequence_of_trees_over_its_rows(self):
        trees = objects.Attribute.list_trees(self.context)

        self.assertIsInstance(trees, attribute_objects.FlatTrees)
        expected = [attribute.uuid for attribute in self.attributes]
        self.assertEqual(expected, [row.uuid for row in trees.flat_rows])
        self.assertEqual(3, len(trees))
        self.assertEqual(expected, self._uuids(trees))
        self.assertEqual(expected[1:], self._uuids(trees[1:]))
        self.assertEqual(expected[-1], trees[-1].row.uuid)
        self.assertEqual(attribute_objects.AttributeTree(
            row=trees.flat_rows[0], parent_uuid=None, children=[]), trees[0])
        self.assertRaises(IndexError, trees.__getitem__, 3)
        self.assertTrue(trees)
        self.assertFalse(objects.Attribute.list_trees(
            self.context, filters={'key': 'none such'}))

    def test_a_page_with_something_nested_is_a_list_of_trees(self):
        records.make_attribute(self.context, self.deployable, 'detail', 'x',
                               parent_attribute_id=self.attributes[0].id)

        trees = objects.Attribute.list_trees(self.context)

        self.assertIsInstance(trees, list)
        self.assertEqual([attribute.uuid for attribute in self.attributes],
                         self._uuids(trees))
        self.assertEqual(['detail'], [child.row.key
                                      for child in trees[0].children])
        self.assertIsNone(getattr(trees, 'flat_rows', None))

    def test_one_nested_attribute_keeps_its_parent(self):
        nested = records.make_attribute(
            self.context, self.deployable, 'detail', 'x',
            parent_attribute_id=self.attributes[0].id)

        tree = objects.Attribute.get_tree(self.context, nested.uuid)

        self.assertEqual((nested.uuid, self.attributes[0].uuid, []),
                         (tree.row.uuid, tree.parent_uuid, tree.children))

    def test_sqlite_finds_children_through_the_index_after_analyze(self):
        # Every parent_attribute_id NULL: ANALYZE's statistics then make
        # the index look useless to SQLite's planner.
        with self.database.engine.begin() as connection:
            connection.exec_driver_sql('ANALYZE')
            statement = attribute_queries._TOP_LEVEL_PAGE.order_by(
                attribute_queries.Attribute.id).limit(1000)
            compiled = statement.compile(dialect=connection.dialect)
            plan = ' | '.join(row[-1] for row in connection.exec_driver_sql(
                'EXPLAIN QUERY PLAN ' + str(compiled),
                tuple(compiled.params[name]
                      for name in compiled.positiontup)))
        self.assertIn('USING INDEX attributes_parent_attribute_id_idx', plan)
        self.assertNotIn('SCAN child', plan)
        # And the page still says what has children.
        records.make_attribute(self.context, self.deployable, 'detail', 'x',
                               parent_attribute_id=self.attributes[0].id)
        page, _ = attribute_queries.list_top_level_with_descendants(
            self.context)
        self.assertEqual([True, False, False],
                         [row.has_children for row in page])
