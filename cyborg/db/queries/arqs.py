"""Queries of the extended_accelerator_requests table (ARQs).

Each ARQ comes back as one row holding the ARQ, its device profile's name
and its attach handle's type, uuid and info, read with joins in one query.
"""

import sqlalchemy as sa

from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.db.queries import rows

ARQ = models.AcceleratorRequest
# Fields that come from joined tables, by the name the ARQ object gives them.
JOINED = {
    'device_profile_name': models.DeviceProfile.name,
    'attach_handle_type': models.AttachHandle.attach_type,
    'attach_handle_uuid': models.AttachHandle.uuid,
    'attach_handle_info': models.AttachHandle.attach_info,
}
COLUMNS = {name: getattr(ARQ, name) for name in ARQ.__table__.columns.keys()}
COLUMNS.update({name: column for name, column in JOINED.items()
                if name != 'attach_handle_info'})


def _select():
    return sa.select(
        ARQ, *(column.label(name) for name, column in JOINED.items())
    ).join(
        models.DeviceProfile, ARQ.device_profile_id == models.DeviceProfile.id
    ).outerjoin(
        models.AttachHandle, ARQ.attach_handle_id == models.AttachHandle.id)


def _get(context, uuid):
    row = context.session.execute(_select().where(ARQ.uuid == uuid)).first()
    if row is None:
        # Raise the same not-found error as every other table.
        rows.get_by(context, ARQ, 'uuid', uuid)
    return row


@db_api.writer
def create(context, values):
    """Insert an ARQ row; return it joined with its profile and attach handle."""
    arq = rows.create(context, ARQ, values)
    return _get(context, arq.uuid)


@db_api.reader
def get_by_uuid(context, uuid):
    """The ARQ with ``uuid``, joined with its profile and attach handle.

    :raises: cyborg.exception.ResourceNotFound
    """
    return _get(context, uuid)


@db_api.reader
def list_arqs(context, filters=None, limit=None, marker=None, sort_key='id',
              sort_dir='asc'):
    """ARQs matching ``filters`` (ARQ column or joined field name to value), in one query."""
    query = rows.page(context, ARQ, _select(), COLUMNS, filters, limit,
                      marker, sort_key, sort_dir)
    return context.session.execute(query).all()


@db_api.writer
def update(context, uuid, values):
    """Change columns of the ARQ with ``uuid``; return it joined again."""
    rows.update(context, ARQ, uuid, values)
    return _get(context, uuid)


@db_api.writer
def destroy(context, uuid):
    """Delete the ARQ with ``uuid``."""
    rows.destroy(context, ARQ, uuid)
