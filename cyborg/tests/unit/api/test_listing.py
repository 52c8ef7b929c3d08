"""How a list view reads its rows (``cyborg.api.views.listing.values_of``)."""

import collections

from cyborg.api.views import listing
from cyborg.db.queries import lean
from cyborg.tests import base


class ValuesOfTest(base.TestCase):

    def test_rows_in_the_asked_order_are_given_as_they_are(self):
        page = lean.Page([(1, 'a'), (2, 'b')], ('id', 'uuid'))

        self.assertIs(page, listing.values_of(page, ('id', 'uuid')))

    def test_other_orders_and_subsets_are_read_by_position(self):
        page = lean.Page([(1, 'a', 'x'), (2, 'b', 'y')],
                         ('id', 'uuid', 'name'))

        self.assertEqual([('a', 1), ('b', 2)],
                         list(listing.values_of(page, ('uuid', 'id'))))
        self.assertEqual([('x', 'a'), ('y', 'b')],
                         list(listing.values_of(page, ('name', 'uuid'))))

    def test_fields_come_from_the_page_the_caller_or_the_first_row(self):
        Row = collections.namedtuple('Row', ('id', 'uuid'))
        rows = [Row(1, 'a'), Row(2, 'b')]
        tuples = [(1, 'a'), (2, 'b')]

        self.assertEqual([('a', 1), ('b', 2)],
                         list(listing.values_of(rows, ('uuid', 'id'))))
        self.assertEqual(
            [('a', 1), ('b', 2)],
            list(listing.values_of(tuples, ('uuid', 'id'),
                                   fields=('id', 'uuid'))))
        self.assertEqual([], listing.values_of(lean.Page([], ('id',)),
                                               ('id',)))
