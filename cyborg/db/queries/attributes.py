"""Queries of the attributes table: key/value facts about deployables."""

import sqlalchemy as sa

from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.db.queries import rows

Attribute = models.Attribute
COLUMNS = {name: getattr(Attribute, name)
           for name in Attribute.__table__.columns.keys()}


@db_api.writer
def create(context, values):
    """Insert a attribute row and return it."""
    return rows.create(context, Attribute, values)


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


@db_api.writer
def update(context, uuid, values):
    """Change columns of the attribute with ``uuid``; return the row."""
    return rows.update(context, Attribute, uuid, values)


@db_api.writer
def destroy(context, uuid):
    """Delete the attribute with ``uuid``."""
    rows.destroy(context, Attribute, uuid)
