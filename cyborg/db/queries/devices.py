"""Queries of the devices table: the accelerator cards of every host."""

import sqlalchemy as sa

from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.db.queries import drain
from cyborg.db.queries import rows

Device = models.Device
COLUMNS = {name: getattr(Device, name) for name in Device.__table__.columns.keys()}
# ?drain= (2.6) compares the derived state: NULL when not drained.
COLUMNS['drain'] = drain.device_drain_sql()


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


# The columns of a list row, in this order (``cyborg.api.views.devices``
# reads them by position): the shown ones and ``drain``, the derived state
# of a drain (``drain.device_drain_sql``).
LIST_COLUMNS = ('id', 'uuid', 'type', 'vendor', 'model', 'std_board_info',
                'vendor_board_info', 'hostname', 'status', 'status_reason',
                'created_at', 'updated_at', 'health', 'health_reason',
                'health_since', 'drain', 'drain_since')

# A list page's SELECT before its filters and paging, built once.
_LIST_PAGE = sa.select(*(
    drain.device_drain_sql().label(name) if name == 'drain'
    else rows.rendered([Device.__table__.c[name]])[0]
    for name in LIST_COLUMNS))


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
