"""Queries of the device_profiles table: named requests for accelerators."""

import sqlalchemy as sa
from oslo_db import exception as db_exception

from cyborg import exception
from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.db.queries import rows

DeviceProfile = models.DeviceProfile
COLUMNS = {name: getattr(DeviceProfile, name)
           for name in DeviceProfile.__table__.columns.keys()}


@db_api.writer
def create(context, values):
    """Insert a device profile row and return it.

    :raises: cyborg.exception.DuplicateName when the name is taken
    """
    try:
        return rows.create(context, DeviceProfile, values)
    except db_exception.DBDuplicateEntry as error:
        # oslo.db derives column names from constraint names: on PostgreSQL
        # "device_profiles_name_key" comes back as "profiles_name".
        columns = error.columns or []
        if any(column == 'name' or column.endswith('_name')
               for column in columns):
            raise exception.DuplicateName(resource='DeviceProfile',
                                          name=values.get('name'))
        raise exception.Conflict(
            'A device profile with uuid %s already exists.' % values.get('uuid'))


@db_api.reader
def get_by_uuid(context, uuid):
    """The device profile with ``uuid``.

    :raises: cyborg.exception.ResourceNotFound
    """
    return rows.get_by(context, DeviceProfile, 'uuid', uuid)


@db_api.reader
def get_by_name(context, name):
    """The device profile called ``name``.

    :raises: cyborg.exception.ResourceNotFound
    """
    return rows.get_by(context, DeviceProfile, 'name', name)


@db_api.reader
def list_device_profiles(context, filters=None, limit=None, marker=None,
                         sort_key='id', sort_dir='asc'):
    """Device profiles matching ``filters`` (column name to value), in one query."""
    query = rows.page(context, DeviceProfile, sa.select(DeviceProfile),
                      COLUMNS, filters, limit, marker, sort_key, sort_dir)
    return context.session.scalars(query).all()


# A list page's SELECT before its filters and paging, built once.
_LIST_PAGE = sa.select(*rows.rendered(DeviceProfile.__table__.columns,
                                      spaced=True))


@db_api.reader
def list_rows(context, filters=None, limit=None, marker=None, sort_key='id',
              sort_dir='asc', plain=False):
    """The page of ``list_device_profiles`` as read-only Core rows (the
    groups as ``profile_json`` text), in one query (with ``plain``, a
    ``lean.Page`` of tuples)."""
    query = rows.page(context, DeviceProfile, _LIST_PAGE, COLUMNS, filters,
                      limit, marker, sort_key, sort_dir)
    return rows.read(context, query, plain=plain)


@db_api.writer
def update(context, uuid, values):
    """Change columns of the device profile with ``uuid``; return the row."""
    return rows.update(context, DeviceProfile, uuid, values)


@db_api.writer
def destroy(context, uuid):
    """Delete the device profile with ``uuid``."""
    rows.destroy(context, DeviceProfile, uuid)


@db_api.writer
def find_for_delete(context, refs):
    """The profiles whose uuid or name is among ``refs``, locked for a delete.

    One query; on MariaDB and PostgreSQL the rows stay locked until the
    transaction ends, so no ARQ can start using them meanwhile.
    """
    refs = [ref for ref in refs if rows.storable(ref)]
    query = sa.select(DeviceProfile).where(sa.or_(
        DeviceProfile.uuid.in_(refs), DeviceProfile.name.in_(refs))
    ).order_by(DeviceProfile.id).with_for_update()
    return context.session.scalars(query).all()


@db_api.reader
def count_arqs_using(context, device_profile_ids):
    """``{profile id: number of ARQs using it}`` for the profiles in use."""
    arq = models.ARQ
    query = sa.select(arq.device_profile_id, sa.func.count(arq.id)).where(
        arq.device_profile_id.in_(device_profile_ids)).group_by(
            arq.device_profile_id)
    return dict(context.session.execute(query).all())


@db_api.writer
def destroy_many(context, device_profile_ids):
    """Delete the profiles with these internal ids, in one statement.

    :raises: oslo_db.exception.DBError when an ARQ still uses one of them
    """
    context.session.execute(sa.delete(DeviceProfile).where(
        DeviceProfile.id.in_(device_profile_ids)))
