"""Attribute: a key/value fact about a deployable (resource class, traits).

An attribute may be nested under another one of the same deployable
(``parent_attribute_id``): a driver reporting a dict value gets
one attribute per key of it. ``AttributeTree`` is that nesting as the API
shows it from microversion 2.4, built from rows (lists only render).
"""

import collections.abc
import dataclasses

from cyborg.db.queries import attributes as attribute_queries
from cyborg.db.queries import lean
from cyborg.objects import base
from cyborg.objects import fields


@dataclasses.dataclass
class AttributeTree:
    """An attribute's read-only row, its parent's uuid (None at the top
    level) and the trees of the attributes nested directly under it, in
    creation order."""

    row: object
    parent_uuid: object
    children: list


class FlatTrees(collections.abc.Sequence):
    """The trees of rows with nothing nested under any (the usual page),
    each made when it is asked for: a list renders ``rows`` themselves
    (``flat_rows``), a tree apiece costing more than the row's rendering.
    """

    def __init__(self, rows, parent_uuid_of):
        self.flat_rows = rows
        self._parent_uuid_of = parent_uuid_of
        self._named = None

    def __len__(self):
        return len(self.flat_rows)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[position] for position in
                    range(*index.indices(len(self)))]
        row = self._rows_by_name()[index]
        return AttributeTree(row=row, parent_uuid=self._parent_uuid_of(row),
                             children=[])


    def _rows_by_name(self):
        if self._named is None:
            self._named = _by_name(self.flat_rows)
        return self._named


def _by_name(rows):
    """``rows``, a plain page's tuples as named rows (a tree reads its row
    by name)."""
    return rows.named() if isinstance(rows, lean.Page) else rows


def _trees(rows, descendants, parent_uuid_of):
    """The trees of ``rows``, their nested attributes taken from
    ``descendants``; ``parent_uuid_of(row)`` is a top row's parent uuid.
    A sequence: ``FlatTrees`` when nothing is nested, else a list."""
    if not descendants:
        # Nothing nested (the usual page): no row's id is read.
        return FlatTrees(rows, parent_uuid_of)
    rows = _by_name(rows)
    below = {}
    for row in descendants:
        below.setdefault(row.parent_attribute_id, []).append(row)

    def tree(row, parent_uuid):
        return AttributeTree(row=row, parent_uuid=parent_uuid,
                             children=[tree(child, row.uuid)
                                       for child in below.get(row.id, ())])

    return [tree(row, parent_uuid_of(row)) for row in rows]


@base.CyborgObjectRegistry.register
class Attribute(base.TableObject):
    """One key and value of a deployable, e.g. ``rc`` = ``FPGA``."""

    # Version 1.0: Initial version
    VERSION = '1.0'

    _queries = attribute_queries
    _list_query = 'list_attributes'

    fields = {
        'id': fields.IntegerField(read_only=True),
        'uuid': fields.UUIDField(),
        'deployable_id': fields.IntegerField(),
        'parent_attribute_id': fields.IntegerField(nullable=True),
        'key': fields.StringField(),
        'value': fields.StringField(nullable=True),
        'created_at': fields.DateTimeField(nullable=True),
        'updated_at': fields.DateTimeField(nullable=True),
    }

    @classmethod
    def list_trees(cls, context, filters=None, limit=None, marker=None,
                   sort_key=None, sort_dir=None, plain=False):
        """One page of the top-level attributes matching ``filters``, each
        an ``AttributeTree`` with everything nested under it.

        Paging, filters and sorting as ``list``, on top-level attributes
        only. One SQL statement, and one more when anything is nested
        under the page (one more for a marker), whatever the page size and
        nesting. With ``plain``, the ``flat_rows`` of a page with nothing
        nested are a ``lean.Page`` of tuples.

        :raises: cyborg.exception.InvalidParameterValue on an unknown
            filter, sort key or marker
        """
        page, descendants = attribute_queries.list_top_level_with_descendants(
            context, filters=filters, limit=limit, marker=marker,
            sort_key=sort_key or 'id', sort_dir=sort_dir or 'asc',
            plain=plain)
        return _trees(page, descendants, lambda row: None)

    @classmethod
    def get_tree(cls, context, uuid):
        """The ``AttributeTree`` of the attribute with ``uuid`` (nested or
        not). Two SQL queries.

        :raises: cyborg.exception.ResourceNotFound
        """
        row, descendants = attribute_queries.get_with_descendants(context,
                                                                  uuid)
        return _trees([row], descendants,
                      lambda row: row.parent_attribute_uuid)[0]

    @classmethod
    def trees_of_deployable(cls, context, deployable_uuid, key=None):
        """The ``AttributeTree`` of each top-level attribute of the
        deployable with ``deployable_uuid`` (those with ``key`` only, if
        given), in creation order. Two SQL queries.

        :raises: cyborg.exception.ResourceNotFound for an unknown deployable
        """
        rows, descendants = attribute_queries.of_deployable_with_descendants(
            context, deployable_uuid, key=key)
        return _trees(rows, descendants, lambda row: None)
