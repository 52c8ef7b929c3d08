"""Queries of the deployables table, each deployable with its attributes.

Functions return ``(deployable, attributes)`` pairs: the attributes of a
whole page come from one extra query, never one query per deployable.
"""

import sqlalchemy as sa

from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.db.queries import rows

Deployable = models.Deployable
COLUMNS = {name: getattr(Deployable, name)
           for name in Deployable.__table__.columns.keys()}


@db_api.writer
def create(context, values):
    """Insert a deployable row; return it with its (empty) attributes."""
    return rows.create(context, Deployable, values), []


@db_api.reader
def get_by_uuid(context, uuid):
    """The deployable with ``uuid`` and its attributes.

    :raises: cyborg.exception.ResourceNotFound
    """
    return _with_attributes(
        context, [rows.get_by(context, Deployable, 'uuid', uuid)])[0]


@db_api.reader
def get_by_id(context, deployable_id):
    """The deployable with the internal ``deployable_id`` and its attributes.

    :raises: cyborg.exception.ResourceNotFound
    """
    return _with_attributes(
        context, [rows.get_by(context, Deployable, 'id', deployable_id)])[0]


@db_api.reader
def list_deployables(context, filters=None, limit=None, marker=None,
                     sort_key='id', sort_dir='asc'):
    """Deployables matching ``filters`` with their attributes, in two queries."""
    query = rows.page(context, Deployable, sa.select(Deployable), COLUMNS,
                      filters, limit, marker, sort_key, sort_dir)
    return _with_attributes(context, context.session.scalars(query).all())


@db_api.writer
def update(context, uuid, values):
    """Change columns of the deployable with ``uuid``; return it with its attributes."""
    return _with_attributes(
        context, [rows.update(context, Deployable, uuid, values)])[0]


@db_api.writer
def destroy(context, uuid):
    """Delete a deployable with its sub-deployables, attributes and attach handles."""
    rows.destroy(context, Deployable, uuid)


def _with_attributes(context, deployables):
    by_deployable = {deployable.id: [] for deployable in deployables}
    if by_deployable:
        query = sa.select(models.Attribute).where(
            models.Attribute.deployable_id.in_(list(by_deployable))
        ).order_by(models.Attribute.id)
        for attribute in context.session.scalars(query):
            by_deployable[attribute.deployable_id].append(attribute)
    return [(deployable, by_deployable[deployable.id])
            for deployable in deployables]
