"""Deployable lists filtered through their device and their attributes.

``cyborg.db.queries.deployables`` filters on the deployable's own columns;
here a list may also match (or sort on) the device's ``hostname``,
``vendor`` and ``type`` (a join, only then) and attribute key/value pairs
(one EXISTS per pair), or on whether a bitstream is loaded. It returns
plain rows for lists that only render, in one statement (each
deployable's attributes aggregated as JSON text by the database); a row may also
carry the uuids of its parent and root (two outer joins of the same
statement) and its attributes nested (microversion 2.4).
"""

import json
import typing

import sqlalchemy as sa
from sqlalchemy.ext import compiler
from sqlalchemy.sql import expression

from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.db.queries import rows

Deployable = models.Deployable
Device = models.Device
Attribute = models.Attribute

DEVICE_COLUMNS = {'hostname': Device.hostname, 'vendor': Device.vendor,
                  'type': Device.type}
COLUMNS = dict(
    {name: getattr(Deployable, name)
     for name in Deployable.__table__.columns.keys()},
    **DEVICE_COLUMNS)


class _attributes_text(expression.FunctionElement):
    """The ``attributes_list`` text of the deployable whose id is the
    argument: its attributes as the JSON array ``[{"key": "value"}, ...]``
    in creation order (``, `` and ``: `` between items, as Python's
    ``json.dumps`` writes; NULL when it has none), aggregated by the
    database in a correlated subquery.

    One statement renders a page of deployables this way: reading the
    attributes as rows of a second statement and joining them in Python
    cost more than the page itself. Strings are quoted by the database's
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


@db_api.reader
def list_rows(context, filters=None, attributes=None, limit=None,
              marker=None, sort_key='id', sort_dir='asc', programmed=None,
              tree_uuids=False, nested_attributes=False):
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
    attributes (``nested_attributes_list``).
    No ORM entity is loaded: the lists only render.
    One statement (one more with a ``marker``, and one more when
    ``nested_attributes`` and a deployable of the page has nested
    attributes), whatever the page size.

    :raises: cyborg.exception.InvalidParameterValue on an unknown filter,
        sort key or marker
    """
    # The deployable's id first: read by position below.
    query = sa.select(Deployable.id, *rows.rendered(
        column for column in Deployable.__table__.columns
        if column.name != 'id'))
    # Only a list that filters or sorts on the device joins it: MariaDB
    # plans the join from the devices table, reading and sorting every
    # deployable for one page.
    if sort_key in DEVICE_COLUMNS or DEVICE_COLUMNS.keys() & set(
            filters or ()):
        query = query.join(Device, Device.id == Deployable.device_id)
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
    if tree_uuids:
        parent = sa.orm.aliased(Deployable)
        root = sa.orm.aliased(Deployable)
        query = query.add_columns(
            parent.uuid.label('parent_uuid'), root.uuid.label('root_uuid'),
        ).outerjoin(parent, parent.id == Deployable.parent_id,
                    ).outerjoin(root, root.id == Deployable.root_id)
    query = query.add_columns(
        _attributes_text(Deployable.id).label('attributes_text'))
    if nested_attributes:
        nested = sa.orm.aliased(Attribute)
        query = query.add_columns(sa.exists().where(
            nested.deployable_id == Deployable.id,
            nested.parent_attribute_id.is_not(None)).label('has_nested'))
    query = rows.page(context, Deployable, query, COLUMNS, filters, limit,
                      marker, sort_key, sort_dir)
    deployables = rows.read(context, query)
    if not deployables:
        return []
    fields = deployables[0]._fields
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

