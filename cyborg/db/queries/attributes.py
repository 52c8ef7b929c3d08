"""Queries of the attributes table: key/value facts about deployables.

An attribute may be nested under another (``parent_attribute_id``). The
``*_with_descendants`` reads answer read-only rows: the attributes asked
for, then every attribute nested under them at any depth, found by one
recursive query, so a page costs the same statements however deep or wide
its trees are.

Every write here refreshes the stored ``attributes_list`` of the
deployables it touched in the same transaction
(``deployable_filters.refresh_attributes_list``): one statement more.
"""

import sqlalchemy as sa
from sqlalchemy.ext import compiler
from sqlalchemy.sql import expression

from cyborg import exception
from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.db.queries import deployable_filters
from cyborg.db.queries import rows

Attribute = models.Attribute
COLUMNS = {name: getattr(Attribute, name)
           for name in Attribute.__table__.columns.keys()}
_TABLE = Attribute.__table__


@db_api.writer
def create(context, values):
    """Insert an attribute row and return it."""
    row = rows.create(context, Attribute, values)
    deployable_filters.refresh_attributes_list(context, [row.deployable_id])
    return row


@db_api.reader
def get_by_uuid(context, uuid):
    """The attribute with ``uuid``.

    :raises: cyborg.exception.ResourceNotFound
    """
    return rows.get_by(context, Attribute, 'uuid', uuid)


@db_api.reader
def list_attributes(context, filters=None, limit=None, marker=None,
                    sort_key='id', sort_dir='asc'):
    """Attributes matching ``filters`` (column name to value), one page, in one query."""
    query = rows.page(context, Attribute, sa.select(Attribute), COLUMNS, filters,
                      limit, marker, sort_key, sort_dir)
    return context.session.scalars(query).all()


# The SELECTs of a list page before its filters and paging, built once
# (aliases and labels cost SQLAlchemy more to build than a small page costs
# to read): the table's columns as the API shows them (rows.rendered).
_PAGE = sa.select(*rows.rendered(_TABLE.columns))
_child = _TABLE.alias('child')


class _has_children(expression.FunctionElement):
    """Whether an attribute is nested under the row's.

    Asked of the row only when some attribute is nested under another at
    all: an uncorrelated EXISTS the database evaluates once per statement,
    so a page of a table with nothing nested (the usual one) probes
    nothing. Then each row looks for one child through the
    parent_attribute_id index (a scalar subquery with LIMIT 1: PostgreSQL
    may turn a correlated EXISTS into a hash of every parent id of the
    table, read for each page, even a page of one row).

    SQLite's statistics (once ANALYZE ran) count every NULL of that column
    as one value, so that the index looks useless and each row scanned the
    whole table (130 ms for a page of 1,000): on SQLite the statement names
    the index (``INDEXED BY``). The other databases' statistics know NULLs.
    """

    inherit_cache = True
    name = 'has_children'
    # Only its truth is read: as the integer MariaDB and SQLite give, with
    # no Boolean result processor to keep the page from the lean read
    # (cyborg.db.queries.lean).
    type = sa.Integer()


_nested = _TABLE.alias('nested')
_HAS_CHILDREN = sa.case(
    (sa.exists().where(_nested.c.parent_attribute_id.is_not(None)),
     sa.select(sa.literal_column('1')).where(
         _child.c.parent_attribute_id == _TABLE.c.id
     ).limit(sa.literal_column('1')).scalar_subquery().is_not(None)),
    else_=sa.false())
_CHILD_INDEX = 'attributes_parent_attribute_id_idx'


@compiler.compiles(_has_children)
def _has_children_sql(element, sql_compiler, **kw):
    return sql_compiler.process(_HAS_CHILDREN, **kw)


@compiler.compiles(_has_children, 'sqlite')
def _has_children_sqlite(element, sql_compiler, **kw):
    text = sql_compiler.process(_HAS_CHILDREN, **kw)
    for alias in ('child', 'nested'):
        source = 'FROM attributes AS %s ' % alias
        if text.count(source) != 1:
            raise AssertionError('unexpected SQL for nested attributes: %s'
                                 % text)
        text = text.replace(source, '%sINDEXED BY %s ' % (source,
                                                          _CHILD_INDEX))
    return text


_TOP_LEVEL_PAGE = _PAGE.add_columns(
    # Whether anything is nested under it: the recursive query is only
    # sent for a page where something is (most have nothing).
    _has_children().label('has_children'))


@db_api.reader
def list_rows(context, filters=None, limit=None, marker=None, sort_key='id',
              sort_dir='asc', plain=False):
    """The page of ``list_attributes`` as read-only rows of the table's
    columns (timestamps as the API's text, ``rows.rendered``), every
    attribute flat: one statement (one more for a ``marker``). With
    ``plain``, a ``lean.Page`` of tuples.

    :raises: cyborg.exception.InvalidParameterValue on an unknown filter,
        sort key or marker
    """
    return rows.read(context, rows.page(context, Attribute, _PAGE, COLUMNS,
                                        filters, limit, marker, sort_key,
                                        sort_dir), plain=plain)


@db_api.reader
def list_top_level_with_descendants(context, filters=None, limit=None,
                                    marker=None, sort_key='id',
                                    sort_dir='asc', plain=False):
    """One page of the attributes nested under none matching ``filters``,
    and every attribute nested under them.

    Returns ``(page, descendants)``, lists of read-only rows of the
    table's columns (``descendants`` in creation order; timestamps as the
    API's text, ``rows.rendered``; ``page`` a ``lean.Page`` of tuples with
    ``plain``). One statement, whatever the page size,
    and one more when anything is nested under the page (one more for a
    ``marker``).

    :raises: cyborg.exception.InvalidParameterValue on an unknown filter,
        sort key or marker (a nested attribute's uuid is not a marker)
    """
    query = rows.page(context, Attribute, _TOP_LEVEL_PAGE, COLUMNS,
                      dict(filters or {}, parent_attribute_id=None),
                      limit, marker, sort_key, sort_dir)
    page = rows.read(context, query, plain=plain)
    if not page:
        return page, []
    id_at, children_at = (rows.fields_of(page).index(name)
                          for name in ('id', 'has_children'))
    return page, _descendants(context, [row[id_at] for row in page
                                        if row[children_at]])


@db_api.reader
def get_with_descendants(context, uuid):
    """The attribute with ``uuid`` and every attribute nested under it.

    Returns ``(row, descendants)``: ``row`` has the table's columns and
    ``parent_attribute_uuid`` (None at the top level). Two queries.

    :raises: cyborg.exception.ResourceNotFound
    """
    parent = sa.orm.aliased(Attribute)
    row = None
    if rows.storable(uuid):
        query = sa.select(
            *_TABLE.columns, parent.uuid.label('parent_attribute_uuid'),
        ).outerjoin(parent, parent.id == Attribute.parent_attribute_id,
                    ).where(Attribute.uuid == uuid)
        row = context.session.execute(query).first()
    if row is None:
        raise exception.ResourceNotFound(resource='Attribute', key='uuid',
                                         value=uuid)
    return row, _descendants(context, [row.id])


@db_api.reader
def of_deployable_with_descendants(context, deployable_uuid, key=None):
    """The top-level attributes of a deployable (those with ``key`` only,
    if given) in creation order, and every attribute nested under them.

    Returns ``(attributes, descendants)`` as
    ``list_top_level_with_descendants`` does. Two queries.

    :raises: cyborg.exception.ResourceNotFound for an unknown deployable
    """
    deployable = models.Deployable
    found = []
    if rows.storable(deployable_uuid):
        matching = [Attribute.deployable_id == deployable.id,
                    Attribute.parent_attribute_id.is_(None)]
        if key is not None:
            # A key no backend can store names no attribute.
            matching.append(Attribute.key == key if rows.storable(key)
                            else sa.false())
        # An outer join: one row with NULL attribute columns tells a
        # deployable without such attributes from an unknown one (none).
        query = sa.select(
            deployable.id.label('known_deployable_id'), *_TABLE.columns,
        ).select_from(deployable).outerjoin(
            Attribute, sa.and_(*matching),
        ).where(deployable.uuid == deployable_uuid).order_by(Attribute.id)
        found = context.session.execute(query).all()
    if not found:
        raise exception.ResourceNotFound(resource='Deployable', key='uuid',
                                         value=deployable_uuid)
    attributes = [row for row in found if row.id is not None]
    return attributes, _descendants(context, [row.id for row in attributes])


def _descendants(context, parent_ids):
    """Every attribute nested at any depth under ``parent_ids``, in
    creation order: one recursive query (none for no ids)."""
    if not parent_ids:
        return []
    tree = sa.select(*_TABLE.columns).where(
        _TABLE.c.parent_attribute_id.in_(sorted(parent_ids))
    ).cte('nested', recursive=True)
    child = _TABLE.alias('child')
    # UNION, not UNION ALL: a cycle (which no writer makes) cannot loop.
    tree = tree.union(sa.select(*child.columns).where(
        child.c.parent_attribute_id == tree.c.id))
    query = sa.select(*rows.rendered(tree.columns)).order_by(tree.c.id)
    return rows.read(context, query)


@db_api.writer
def update(context, uuid, values):
    """Change columns of the attribute with ``uuid``; return the row."""
    deployable_ids = set()
    if 'deployable_id' in values:
        # Moved to another deployable: the one it leaves changes too.
        deployable_ids.add(rows.get_by(context, Attribute, 'uuid',
                                       uuid).deployable_id)
    row = rows.update(context, Attribute, uuid, values)
    deployable_ids.add(row.deployable_id)
    deployable_filters.refresh_attributes_list(context, deployable_ids)
    return row


@db_api.writer
def destroy(context, uuid):
    """Delete the attribute with ``uuid`` (its nested attributes go with it:
    ON DELETE CASCADE, all of the same deployable).

    :raises: cyborg.exception.ResourceNotFound
    """
    # Read before the delete: the refresh needs the deployable's id.
    deployable_id = None
    if rows.storable(uuid):
        deployable_id = context.session.execute(
            sa.select(Attribute.deployable_id).where(Attribute.uuid == uuid)
        ).scalar_one_or_none()
    if deployable_id is None:
        raise exception.ResourceNotFound(resource='Attribute', key='uuid',
                                         value=uuid)
    rows.destroy(context, Attribute, uuid)
    deployable_filters.refresh_attributes_list(context, [deployable_id])
