"""Deployable lists filtered through their device and their attributes.

``cyborg.db.queries.deployables`` filters on the deployable's own columns;
here a list may also match (or sort on) the device's ``hostname``,
``vendor`` and ``type`` (a join, only then) and attribute key/value pairs
(one EXISTS per pair), or on whether a bitstream is loaded. It returns
plain rows for lists that only render, in two queries; a row may also
carry the uuids of its parent and root (two outer joins of the same
statement) and its attributes nested (microversion 2.4).
"""

import typing

import sqlalchemy as sa

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


@db_api.reader
def list_rows(context, filters=None, attributes=None, limit=None,
              marker=None, sort_key='id', sort_dir='asc', programmed=None,
              tree_uuids=False, nested_attributes=False):
    """Deployables matching ``filters`` and every (key, value) of ``attributes``.

    ``filters`` may name the deployable's columns and the device's
    ``hostname``, ``vendor`` and ``type``; ``programmed`` True keeps the
    deployables with a ``bitstream_id``, False those without one. Returns
    ``(row, attributes_list)`` pairs of one page: each row a read-only Core
    row of the deployable's columns, ``attributes_list`` its attributes as
    ``[{key: value}, ...]`` in creation order. With ``tree_uuids`` each
    row also has ``parent_uuid`` and ``root_uuid`` (None on a root); with
    ``nested_attributes`` a nested attribute is found under its parent,
    whose value is then the object of its nested attributes
    (``nested_attributes_list``).
    No ORM entity is loaded: the lists only render.
    Two queries (three with a ``marker``), whatever the page size.

    :raises: cyborg.exception.InvalidParameterValue on an unknown filter,
        sort key or marker
    """
    # The deployable's id first: read by position below.
    query = sa.select(Deployable.id, *(
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
    query = rows.page(context, Deployable, query, COLUMNS, filters, limit,
                      marker, sort_key, sort_dir)
    deployables = rows.read(context, query)
    # By position: a row's attribute costs SQLAlchemy about a microsecond.
    ids = [deployable[0] for deployable in deployables]
    by_deployable = {deployable_id: [] for deployable_id in ids}
    nested = False
    if by_deployable:
        # Ordered as the deployable_id index is (InnoDB's holds the primary
        # key too): ordering by id alone makes MariaDB walk the whole table
        # in primary key order instead of reading the page's range.
        # A second statement, not a join: the page's rows joined to their
        # attributes (or their attributes aggregated as JSON) cost MariaDB
        # and PostgreSQL more than the two reads, the driver decoding each
        # deployable again per attribute.
        query = sa.select(
            Attribute.deployable_id, Attribute.id,
            Attribute.parent_attribute_id, Attribute.key, Attribute.value
        ).where(Attribute.deployable_id.in_(list(by_deployable))
                ).order_by(Attribute.deployable_id, Attribute.id)
        for deployable_id, *attribute in rows.read(context, query):
            by_deployable[deployable_id].append(attribute)
            nested = nested or attribute[1] is not None
    if nested and nested_attributes:
        return [(deployable, nested_attributes_list(
            [_Attribute(*attribute)
             for attribute in by_deployable[deployable_id]]))
            for deployable, deployable_id in zip(deployables, ids,
                                                 strict=True)]
    return [(deployable, [{key: value} for _, _, key, value
                          in by_deployable[deployable_id]])
            for deployable, deployable_id in zip(deployables, ids,
                                                 strict=True)]


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

