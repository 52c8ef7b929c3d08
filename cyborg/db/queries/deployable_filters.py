"""Deployable lists filtered through their device and their attributes.

``cyborg.db.queries.deployables`` filters on the deployable's own columns;
here a list may also match (or sort on) the device's ``hostname``,
``vendor``, ``type`` and ``uuid`` (``device_uuid``; a join, only then)
and attribute key/value pairs
(one EXISTS per pair), or on whether a bitstream is loaded. It returns
plain rows for lists that only render, in one statement (each
deployable's attributes as the JSON text stored on its row); a row may also
carry the uuids of its parent and root (two outer joins of the same
statement) and its attributes nested (microversion 2.4).

The stored text (``deployables.attributes_list``, with
``has_nested_attributes``) is a copy of what the database aggregates from
the attributes table (``_attributes_text``): every writer of that table
calls ``refresh_attributes_list`` in its own transaction, so that a list
reads one column instead of aggregating each row's attributes.
"""

import functools
import json
import typing

import sqlalchemy as sa
from sqlalchemy.ext import compiler
from sqlalchemy.sql import expression

from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.db.queries import drain
from cyborg.db.queries import inventory
from cyborg.db.queries import lean
from cyborg.db.queries import rows

Deployable = models.Deployable
Device = models.Device
Attribute = models.Attribute

DEVICE_COLUMNS = {'hostname': Device.hostname, 'vendor': Device.vendor,
                  'type': Device.type, 'device_uuid': Device.uuid}
# The deployable's columns that only back the lists (a derived copy of its
# attributes, kept by refresh_attributes_list): never shown, filtered or
# sorted on.
DERIVED_COLUMNS = models.DEPLOYABLE_DERIVED_COLUMNS
COLUMNS = dict(
    {name: getattr(Deployable, name)
     for name in Deployable.__table__.columns.keys()
     if name not in DERIVED_COLUMNS},
    **DEVICE_COLUMNS)
# ?drain= (2.6) compares the derived state: NULL when not drained.
COLUMNS['drain'] = drain.deployable_drain_sql()


class _attributes_text(expression.FunctionElement):
    """The ``attributes_list`` text of the deployable whose id is the
    argument: its attributes as the JSON array ``[{"key": "value"}, ...]``
    in creation (id) order (``, `` and ``: `` between items, as Python's
    ``json.dumps`` writes; NULL when it has none), aggregated by the
    database in a correlated subquery.

    ``refresh_attributes_list`` stores it on the deployable's row, which
    the lists read: aggregating it for each row of a page cost 8-13 ms of
    the database's time per 1,000 rows, and reading the attributes as rows
    of a second statement and joining them in Python cost more than the
    page itself. Strings are quoted by the database's
    JSON functions, which write what ``json.dumps(..., ensure_ascii=False)``
    writes (MariaDB's hex digits of a control character's ``\\u`` escape
    are upper case).
    """

    inherit_cache = True
    name = 'attributes_text'
    type = sa.Text()


# Each backend's subquery; only the compiled outer column (the deployable's
# id) is put into it. SQLite's group_concat takes no ORDER BY before 3.44:
# it keeps the order of the ordered subquery it reads. MariaDB's
# GROUP_CONCAT is long enough for any deployable (cyborg.db.api raises
# group_concat_max_len for every connection).
_ATTRIBUTES_TEXT = {
    'sqlite': (
        "(SELECT '[' || group_concat('{' || json_quote(\"key\") || ': ' || "
        "json_quote(value) || '}', ', ') || ']' FROM (SELECT \"key\", value "
        "FROM attributes WHERE deployable_id = %s ORDER BY id))"),
    'mysql': (
        "(SELECT CONCAT('[', GROUP_CONCAT(CONCAT('{', JSON_QUOTE(a.`key`), "
        "': ', COALESCE(JSON_QUOTE(a.value), 'null'), '}') ORDER BY a.id "
        "SEPARATOR ', '), ']') FROM attributes a WHERE a.deployable_id = %s)"),
    'postgresql': (
        "(SELECT '[' || string_agg('{' || to_json(a.key)::text || ': ' || "
        "COALESCE(to_json(a.value)::text, 'null') || '}', ', ' ORDER BY "
        "a.id) || ']' FROM attributes a WHERE a.deployable_id = %s)"),
}


@compiler.compiles(_attributes_text)
def _attributes_text_sql(element, sql_compiler, **kw):
    template = _ATTRIBUTES_TEXT[sql_compiler.dialect.name]
    return template % sql_compiler.process(element.clauses, **kw)


def _has_nested(deployable_id):
    """Whether an attribute of the deployable whose id is
    ``deployable_id`` (a column) is nested under another: an EXISTS."""
    nested = Attribute.__table__.alias('nested_attribute')
    return sa.exists().where(nested.c.deployable_id == deployable_id,
                             nested.c.parent_attribute_id.is_not(None))


def refresh_statements(deployable_ids):
    """The UPDATEs that store the ``attributes_list`` and
    ``has_nested_attributes`` of ``deployable_ids`` afresh from the
    attributes table: one per IN_LIST_IDS ids, none for no ids.

    Each sets the columns to what the database aggregates now
    (``_attributes_text``, the text the lists showed when they aggregated
    it themselves) and leaves ``updated_at`` as it is: the deployable
    itself did not change (its attributes have their own timestamps).
    """
    table = Deployable.__table__
    return [
        sa.update(table).where(table.c.id.in_(chunk)).values(
            attributes_list=_attributes_text(table.c.id),
            has_nested_attributes=_has_nested(table.c.id),
            updated_at=table.c.updated_at)
        for chunk in inventory.id_chunks(deployable_ids)]


@db_api.writer
def refresh_attributes_list(context, deployable_ids):
    """Store ``attributes_list`` and ``has_nested_attributes`` of the
    deployables with ``deployable_ids`` afresh, in the caller's transaction.

    Every writer of the attributes table calls it after its writes, with
    the ids of the deployables whose attributes it inserted, changed or
    deleted: one statement (one per IN_LIST_IDS ids), none for no ids. An
    id of a deployable that is gone is ignored.
    """
    for statement in refresh_statements(deployable_ids):
        context.session.execute(statement)


# The deployable's columns a list shows (cyborg.api.views.deployables);
# the programming lock's and the stored copies' are not among them.
_LISTED_COLUMNS = ('uuid', 'parent_id', 'root_id', 'name', 'num_accelerators',
                   'device_id', 'driver_name', 'rp_uuid', 'bitstream_id',
                   'created_at', 'updated_at')


def _uuid_of(alias, id_column):
    """The uuid of the deployable ``id_column`` names, NULL for none.

    A root (no parent, no root) is not looked up at all: a lookup costs
    each row an index probe even for NULL, a third of a 1,000-root page's
    time in the database.
    """
    return sa.case(
        (id_column.is_(None), sa.null()),
        else_=sa.select(alias.c.uuid).where(
            alias.c.id == id_column).scalar_subquery())


@functools.cache
def _base_query(join_device, tree_uuids, nested_attributes, fleet=False):
    """The SELECT of a page before its filters, of one of the sixteen
    shapes a list may take: built once (aliases and labels cost SQLAlchemy more to
    build than a small page costs to read).

    The deployable's id comes first: ``list_rows`` reads it by position.
    """
    table = Deployable.__table__
    query = sa.select(Deployable.id, *rows.rendered(
        table.c[name] for name in _LISTED_COLUMNS))
    # Only a list that filters or sorts on the device joins it: MariaDB
    # plans the join from the devices table, reading and sorting every
    # deployable for one page.
    if join_device:
        query = query.join(Device, Device.id == Deployable.device_id)
    if tree_uuids:
        # A lookup of the primary key per row: PostgreSQL plans outer
        # joins of the whole table as hash joins, four times the work.
        parent = table.alias('parent_deployable')
        root = table.alias('root_deployable')
        query = query.add_columns(
            _uuid_of(parent, Deployable.parent_id).label('parent_uuid'),
            _uuid_of(root, Deployable.root_id).label('root_uuid'))
    # The stored copies (refresh_attributes_list), not an aggregate per row.
    query = query.add_columns(
        Deployable.attributes_list.label('attributes_text'))
    if nested_attributes:
        # Read as the integer MariaDB and SQLite hold: only its truth is
        # read, and a Boolean's result processor would keep the page from
        # the lean read (cyborg.db.queries.lean).
        query = query.add_columns(sa.type_coerce(
            Deployable.has_nested_attributes, sa.Integer).label('has_nested'))
    if fleet:
        # Health as stored, the drain's state derived (drain.py).
        query = query.add_columns(*rows.rendered(
            table.c[name] for name in ('health', 'health_reason',
                                       'health_since')))
        query = query.add_columns(
            drain.deployable_drain_sql().label('drain'),
            *rows.rendered([table.c.drain_since]))
    return query


@db_api.reader
def list_rows(context, filters=None, attributes=None, limit=None,
              marker=None, sort_key='id', sort_dir='asc', programmed=None,
              tree_uuids=False, nested_attributes=False, fleet=False,
              plain=False):
    """Deployables matching ``filters`` and every (key, value) of ``attributes``.

    ``filters`` may name the deployable's columns and the device's
    ``hostname``, ``vendor`` and ``type``; ``programmed`` True keeps the
    deployables with a ``bitstream_id``, False those without one. Returns
    ``(row, attributes_list)`` pairs of one page: each row a read-only Core
    row of the deployable's columns (timestamps as the API's text,
    ``rows.rendered``), ``attributes_list`` the JSON text of its attributes,
    ``[{"key": "value"}, ...]`` in creation order, as the API shows it.
    With ``tree_uuids`` each row also has ``parent_uuid`` and ``root_uuid``
    (None on a root); with ``nested_attributes`` a nested attribute is
    found under its parent, whose value is then the object of its nested
    attributes (``nested_attributes_list``). With ``fleet`` each row also
    has ``health``, ``health_reason``, ``health_since``, ``drain`` (its
    derived state, ``cyborg.db.queries.drain``) and ``drain_since``.
    With ``plain`` each row is a tuple, and the pairs a ``lean.Page``
    whose ``fields`` name the rows' columns.
    No ORM entity is loaded: the lists only render.
    One statement (one more with a ``marker``, and one more when
    ``nested_attributes`` and a deployable of the page has nested
    attributes), whatever the page size.

    :raises: cyborg.exception.InvalidParameterValue on an unknown filter,
        sort key or marker
    """
    query = _base_query(
        sort_key in DEVICE_COLUMNS
        or bool(DEVICE_COLUMNS.keys() & set(filters or ())),
        tree_uuids, nested_attributes, fleet)
    query = _narrowed(query, attributes, programmed)
    query = rows.page(context, Deployable, query, COLUMNS, filters, limit,
                      marker, sort_key, sort_dir)
    deployables = rows.read(context, query, plain=plain)
    if not deployables:
        return []
    fields = rows.fields_of(deployables)
    results = _with_attributes_lists(context, deployables, fields,
                                     nested_attributes)
    return lean.Page(results, fields) if plain else results


def _narrowed(query, attributes, programmed):
    """``query`` keeping the deployables with every (key, value) of
    ``attributes`` and, unless ``programmed`` is None, with (True) or
    without (False) a ``bitstream_id``."""
    for key, value in attributes or ():
        if not (rows.storable(key) and rows.storable(value)):
            query = query.where(sa.false())
            continue
        query = query.where(sa.exists().where(
            Attribute.deployable_id == Deployable.id,
            Attribute.key == key, Attribute.value == value))
    if programmed is not None:
        query = query.where(Deployable.bitstream_id.is_not(None) if programmed
                            else Deployable.bitstream_id.is_(None))
    return query


def _with_attributes_lists(context, deployables, fields, nested_attributes):
    """``(row, attributes_list)`` of each row of ``deployables``: the stored
    flat list, or with ``nested_attributes`` the nested one of the rows
    that have nested attributes (one more statement, only for those)."""
    text_at = fields.index('attributes_text')
    results = [(deployable, deployable[text_at] or '[]')
               for deployable in deployables]
    if nested_attributes:
        nested_at = fields.index('has_nested')
        trees = _nested_lists(context, [
            deployable[0] for deployable in deployables
            if deployable[nested_at]])
        results = [(deployable, trees.get(deployable[0], text))
                   for deployable, text in results]
    return results


def _nested_lists(context, deployable_ids):
    """``{deployable id: attributes_list}`` of ``deployable_ids`` (those
    with nested attributes), their nested attributes under their parent
    (``nested_attributes_list``): one statement, none for no ids."""
    if not deployable_ids:
        return {}
    by_deployable = {deployable_id: [] for deployable_id in deployable_ids}
    # Ordered as the deployable_id index is (InnoDB's holds the primary key
    # too): ordering by id alone makes MariaDB walk the whole table.
    query = sa.select(
        Attribute.deployable_id, Attribute.id,
        Attribute.parent_attribute_id, Attribute.key, Attribute.value
    ).where(Attribute.deployable_id.in_(deployable_ids)
            ).order_by(Attribute.deployable_id, Attribute.id)
    for deployable_id, *attribute in rows.read(context, query):
        by_deployable[deployable_id].append(_Attribute(*attribute))
    # The separators and quoting of the database's text (_attributes_text).
    return {deployable_id: json.dumps(nested_attributes_list(attributes),
                                      ensure_ascii=False)
            for deployable_id, attributes in by_deployable.items()}


class _Attribute(typing.NamedTuple):
    """One attribute of a deployable as ``nested_attributes_list`` reads it."""

    id: int
    parent_attribute_id: int
    key: str
    value: str


def nested_attributes_list(attributes):
    """``[{key: value}, ...]`` of the top-level ``attributes`` (rows with
    ``id``, ``parent_attribute_id``, ``key`` and ``value``, in creation
    order), where an attribute with nested attributes has as value the
    object of theirs, ``{key: value}``, at any depth.

    A nested attribute whose parent is not among ``attributes`` is shown at
    the top level, not lost.
    """
    ids = {attribute.id for attribute in attributes}
    children = {}
    top = []
    for attribute in attributes:
        if attribute.parent_attribute_id in ids:
            children.setdefault(attribute.parent_attribute_id, []).append(
                attribute)
        else:
            top.append(attribute)

    def value_of(attribute):
        below = children.get(attribute.id)
        if not below:
            return attribute.value
        return {child.key: value_of(child) for child in below}

    # Each attribute has one parent, so no cycle is reachable from the top.
    return [{attribute.key: value_of(attribute)} for attribute in top]

