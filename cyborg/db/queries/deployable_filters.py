"""Deployable lists filtered through their device and their attributes.

``cyborg.db.queries.deployables`` filters on the deployable's own columns;
here a list may also match (or sort on) the device's ``hostname``,
``vendor`` and ``type`` (a join, only then) and attribute key/value pairs
(one EXISTS per pair). It returns plain rows for lists that only render,
in two queries.
"""

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
              marker=None, sort_key='id', sort_dir='asc'):
    """Deployables matching ``filters`` and every (key, value) of ``attributes``.

    ``filters`` may name the deployable's columns and the device's
    ``hostname``, ``vendor`` and ``type``. Returns ``(row,
    attributes_list)`` pairs of one page: each row a read-only Core row of
    the deployable's columns, ``attributes_list`` its attributes as
    ``[{key: value}, ...]`` in creation order. No ORM entity is loaded: the
    lists only render.
    Two queries, whatever the page size.

    :raises: cyborg.exception.InvalidParameterValue on an unknown filter,
        sort key or marker
    """
    query = sa.select(*Deployable.__table__.columns)
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
    query = rows.page(context, Deployable, query, COLUMNS, filters, limit,
                      marker, sort_key, sort_dir)
    deployables = context.session.execute(query).all()
    by_deployable = {deployable.id: [] for deployable in deployables}
    if by_deployable:
        # Ordered as the deployable_id index is (InnoDB's holds the primary
        # key too): ordering by id alone makes MariaDB walk the whole table
        # in primary key order instead of reading the page's range.
        query = sa.select(
            Attribute.deployable_id, Attribute.key, Attribute.value
        ).where(Attribute.deployable_id.in_(list(by_deployable))
                ).order_by(Attribute.deployable_id, Attribute.id)
        for deployable_id, key, value in context.session.execute(query):
            by_deployable[deployable_id].append({key: value})
    return [(deployable, by_deployable[deployable.id])
            for deployable in deployables]

