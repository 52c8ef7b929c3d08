"""Queries of the controlpath_ids table: how drivers reach each device."""

import sqlalchemy as sa

from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.db.queries import rows

ControlpathID = models.ControlpathID
COLUMNS = {name: getattr(ControlpathID, name)
           for name in ControlpathID.__table__.columns.keys()}


@db_api.writer
def create(context, values):
    """Insert a controlpath ID row and return it."""
    return rows.create(context, ControlpathID, values)


@db_api.reader
def get_by_uuid(context, uuid):
    """The controlpath ID with ``uuid``.

    :raises: cyborg.exception.ResourceNotFound
    """
    return rows.get_by(context, ControlpathID, 'uuid', uuid)


@db_api.reader
def list_controlpath_ids(context, filters=None, limit=None, marker=None,
                         sort_key='id', sort_dir='asc'):
    """Controlpath IDs matching ``filters`` (column name to value), one page, in one query."""
    query = rows.page(context, ControlpathID, sa.select(ControlpathID), COLUMNS, filters,
                      limit, marker, sort_key, sort_dir)
    return context.session.scalars(query).all()


@db_api.writer
def update(context, uuid, values):
    """Change columns of the controlpath ID with ``uuid``; return the row."""
    return rows.update(context, ControlpathID, uuid, values)


@db_api.writer
def destroy(context, uuid):
    """Delete the controlpath ID with ``uuid``."""
    rows.destroy(context, ControlpathID, uuid)
