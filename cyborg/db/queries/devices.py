"""Queries of the devices table: the accelerator cards of every host."""

import sqlalchemy as sa

from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.db.queries import rows

Device = models.Device
COLUMNS = {name: getattr(Device, name) for name in Device.__table__.columns.keys()}


@db_api.writer
def create(context, values):
    """Insert a device row and return it."""
    return rows.create(context, Device, values)


@db_api.reader
def get_by_uuid(context, uuid):
    """The device with ``uuid``.

    :raises: cyborg.exception.ResourceNotFound
    """
    return rows.get_by(context, Device, 'uuid', uuid)


@db_api.reader
def get_by_id(context, device_id):
    """The device with the internal ``device_id``.

    :raises: cyborg.exception.ResourceNotFound
    """
    return rows.get_by(context, Device, 'id', device_id)


@db_api.reader
def list_devices(context, filters=None, limit=None, marker=None,
                 sort_key='id', sort_dir='asc'):
    """Devices matching ``filters`` (column name to value), one page, in one query."""
    query = rows.page(context, Device, sa.select(Device), COLUMNS, filters,
                      limit, marker, sort_key, sort_dir)
    return context.session.scalars(query).all()


# A list page's SELECT before its filters and paging, built once.
_LIST_PAGE = sa.select(*rows.rendered(Device.__table__.columns))


@db_api.reader
def list_rows(context, filters=None, limit=None, marker=None, sort_key='id',
              sort_dir='asc', plain=False):
    """The page of ``list_devices`` as read-only Core rows, for lists that
    only render (with ``plain``, a ``lean.Page`` of tuples)."""
    query = rows.page(context, Device, _LIST_PAGE, COLUMNS, filters, limit,
                      marker, sort_key, sort_dir)
    return rows.read(context, query, plain=plain)


@db_api.writer
def update(context, uuid, values):
    """Change columns of the device with ``uuid``; return the row."""
    return rows.update(context, Device, uuid, values)


@db_api.writer
def destroy(context, uuid):
    """Delete a device with its deployables, attributes and attach handles."""
    rows.destroy(context, Device, uuid)
