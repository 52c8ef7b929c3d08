"""Queries of the attach_handles table: what Nova attaches to an instance."""

import sqlalchemy as sa

from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.db.queries import rows

AttachHandle = models.AttachHandle
COLUMNS = {name: getattr(AttachHandle, name)
           for name in AttachHandle.__table__.columns.keys()}


@db_api.writer
def create(context, values):
    """Insert a attach handle row and return it."""
    return rows.create(context, AttachHandle, values)


@db_api.reader
def get_by_uuid(context, uuid):
    """The attach handle with ``uuid``.

    :raises: cyborg.exception.ResourceNotFound
    """
    return rows.get_by(context, AttachHandle, 'uuid', uuid)


@db_api.reader
def list_attach_handles(context, filters=None, limit=None, marker=None,
                        sort_key='id', sort_dir='asc'):
    """Attach handles matching ``filters`` (column name to value), one page, in one query."""
    query = rows.page(context, AttachHandle, sa.select(AttachHandle), COLUMNS, filters,
                      limit, marker, sort_key, sort_dir)
    return context.session.scalars(query).all()


@db_api.writer
def update(context, uuid, values):
    """Change columns of the attach handle with ``uuid``; return the row."""
    return rows.update(context, AttachHandle, uuid, values)


@db_api.writer
def destroy(context, uuid):
    """Delete the attach handle with ``uuid``."""
    rows.destroy(context, AttachHandle, uuid)
