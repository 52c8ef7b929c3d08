"""Row helpers the per-table query modules share: create, fetch, update, delete, page.

They run inside the caller's transaction and carry no ``reader``/``writer``
decorator of their own: the per-table function that calls them has one.
"""

import sqlalchemy as sa

from cyborg import exception

SORT_DIRECTIONS = ('asc', 'desc')


def create(context, model, values):
    """Insert one row of ``model`` and return it (flushed, so ``id`` is set)."""
    row = model(**values)
    context.session.add(row)
    context.session.flush()
    return row


def get_by(context, model, column_name, value):
    """The row of ``model`` whose ``column_name`` equals ``value``.

    :raises: cyborg.exception.ResourceNotFound
    """
    query = sa.select(model).where(getattr(model, column_name) == value)
    row = context.session.scalars(query).one_or_none()
    if row is None:
        raise exception.ResourceNotFound(resource=model.__name__,
                                         key=column_name, value=value)
    return row


def update(context, model, uuid, values):
    """Set ``values`` on the row with ``uuid`` and return it.

    :raises: cyborg.exception.ResourceNotFound
    """
    unknown = set(values) - set(model.__table__.columns.keys())
    if unknown:
        raise exception.InvalidParameterValue(
            err='%s has no column %s' % (model.__name__,
                                         ', '.join(sorted(unknown))))
    row = get_by(context, model, 'uuid', uuid)
    for name, value in values.items():
        setattr(row, name, value)
    context.session.flush()
    return row


def destroy(context, model, uuid):
    """Delete the row with ``uuid``; the database cascades to dependent rows.

    :raises: cyborg.exception.ResourceNotFound
    """
    # A bulk DELETE leaves ON DELETE CASCADE / SET NULL to the database.
    result = context.session.execute(
        sa.delete(model).where(model.uuid == uuid))
    if result.rowcount == 0:
        raise exception.ResourceNotFound(resource=model.__name__,
                                         key='uuid', value=uuid)


def page(context, model, query, columns, filters=None, limit=None,
         marker=None, sort_key='id', sort_dir='asc'):
    """Add exact-match filters, a stable order, a marker and a limit to ``query``.

    ``query`` selects from ``model`` (possibly joined to other tables) and
    ``columns`` maps each name a caller may filter or sort on to its column.
    A filter value that is a list, tuple or set matches any of its members;
    None matches NULL. ``marker`` is the uuid of the last row of the
    previous page. Rows are ordered by ``sort_key`` then ``id``, NULLs
    first in ascending order, the same on every backend.

    :raises: cyborg.exception.InvalidParameterValue on an unknown filter,
        sort key, sort direction or marker.
    """
    for name, value in (filters or {}).items():
        column = _column(columns, name, 'filter')
        if isinstance(value, (list, tuple, set, frozenset)):
            query = query.where(column.in_(list(value)))
        elif value is None:
            query = query.where(column.is_(None))
        else:
            query = query.where(column == value)

    if sort_dir not in SORT_DIRECTIONS:
        raise exception.InvalidParameterValue(
            err='Invalid sort direction %s; expected asc or desc' % sort_dir)
    sort_column = _column(columns, sort_key, 'sort key')
    # A column of another (outer-joined) table may be NULL whatever its model says.
    nullable = sort_key != 'id' and not (
        getattr(sort_column, 'class_', None) is model and not sort_column.nullable)

    if marker is not None:
        query = query.where(_after_marker(
            context, model, query, sort_column, sort_dir, nullable, marker))

    order = []
    if nullable:
        # 0 for NULL, 1 otherwise: portable "NULLS FIRST" (MySQL has no syntax).
        order.append(sa.case((sort_column.is_(None), 0), else_=1))
    order.append(sort_column)
    if sort_key != 'id':
        order.append(model.id)
    direction = sa.asc if sort_dir == 'asc' else sa.desc
    query = query.order_by(*(direction(item) for item in order))
    if limit is not None:
        query = query.limit(limit)
    return query


def _column(columns, name, purpose):
    try:
        return columns[name]
    except KeyError:
        raise exception.InvalidParameterValue(
            err='Invalid %s %s' % (purpose, name)) from None


def _after_marker(context, model, query, sort_column, sort_dir, nullable,
                  marker):
    """A condition selecting the rows that sort after the marker row."""
    marker_query = query.with_only_columns(sort_column, model.id).where(
        model.uuid == marker)
    found = context.session.execute(marker_query).first()
    if found is None:
        raise exception.InvalidParameterValue(
            err='Marker %s was not found' % marker)
    marker_value, marker_id = found
    ascending = sort_dir == 'asc'
    id_after = model.id > marker_id if ascending else model.id < marker_id
    if sort_column is model.id:
        return id_after
    if marker_value is None:
        same_value = sa.and_(sort_column.is_(None), id_after)
        # Ascending puts NULLs first: every non-NULL row follows the marker.
        if ascending:
            return sa.or_(same_value, sort_column.is_not(None))
        return same_value
    value_after = (sort_column > marker_value if ascending
                   else sort_column < marker_value)
    conditions = [value_after,
                  sa.and_(sort_column == marker_value, id_after)]
    if nullable and not ascending:
        # Descending puts NULLs last: they all follow a non-NULL marker.
        conditions.append(sort_column.is_(None))
    return sa.or_(*conditions)
