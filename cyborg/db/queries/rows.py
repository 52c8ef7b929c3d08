"""Row helpers the per-table query modules share: create, fetch, update, delete, page.

They run inside the caller's transaction and carry no ``reader``/``writer``
decorator of their own: the per-table function that calls them has one.
"""

import datetime

import sqlalchemy as sa
from sqlalchemy.ext import compiler
from sqlalchemy.sql import expression

from cyborg.db.queries import lean
from cyborg import exception

SORT_DIRECTIONS = ('asc', 'desc')
_MICROSECOND = datetime.timedelta(microseconds=1)


class _by_code_point(expression.FunctionElement):
    """A string column as every backend orders and compares it: by code point.

    SQLite compares bytes (BINARY). MariaDB's default utf8mb4_general_ci
    ignores case, accents and trailing spaces, and a PostgreSQL database
    created with a linguistic locale sorts by it: both would page and sort
    differently from SQLite. UTF-8 bytes sort in code point order, so each
    backend compares bytes.
    """

    inherit_cache = True
    name = 'by_code_point'

    def __init__(self, column):
        super().__init__(column)
        self.type = column.type


@compiler.compiles(_by_code_point)
def _by_code_point_default(element, sql_compiler, **kw):
    return sql_compiler.process(element.clauses, **kw)


@compiler.compiles(_by_code_point, 'mysql')
@compiler.compiles(_by_code_point, 'mariadb')
def _by_code_point_mysql(element, sql_compiler, **kw):
    return 'CAST(%s AS BINARY)' % sql_compiler.process(element.clauses, **kw)


@compiler.compiles(_by_code_point, 'postgresql')
def _by_code_point_postgresql(element, sql_compiler, **kw):
    return '(%s COLLATE "C")' % sql_compiler.process(element.clauses, **kw)


class _iso_seconds(expression.FunctionElement):
    """A timestamp column as the API's text, formatted by the database:
    ``YYYY-MM-DDTHH:MM:SS+00:00`` (seconds truncated; stored times are
    UTC), or NULL; on PostgreSQL the column itself.

    Lists read their timestamps this way: a driver turning each value into
    a datetime (mysqlclient parses them in Python) and the view turning it
    back into text cost more than the rest of a list row together.
    ``cyborg.api.views.listing.timestamp`` gives the same text of a
    datetime. psycopg builds datetimes in C, faster than PostgreSQL's
    ``to_char`` writes text (0.35 µs a value), and the answer's encoder
    writes a naive datetime as this same text (``cyborg.api.responses``):
    there a row keeps its datetime.
    """

    inherit_cache = True
    name = 'iso_seconds'
    type = sa.String()
    # Between the date and the time.
    separator = 'T'


class _iso_seconds_spaced(_iso_seconds):
    """``_iso_seconds`` with a space between date and time, as device
    profiles show their timestamps (upstream's format), formatted by the
    database on every backend (no encoder writes this form)."""

    inherit_cache = True
    separator = ' '


# Per backend, the call and the format of the same text (``%s``: the
# separator). SQLite stores SQLAlchemy's DateTime as
# 'YYYY-MM-DD HH:MM:SS.ffffff' text, which its strftime reads. PostgreSQL
# casts the timestamp cut to seconds to text, which its ISO DateStyle
# (set on every connection: ``cyborg.db.api._iso_datestyle``) writes with a
# space: 0.15 µs a value where to_char took 0.75.
_ISO_SQL = {
    'sqlite': ('strftime({format}, {column})',
               '%%Y-%%m-%%d%s%%H:%%M:%%S+00:00'),
    'mysql': ('DATE_FORMAT({column}, {format})',
              '%%Y-%%m-%%d%s%%H:%%i:%%s+00:00'),
    'postgresql': ("(CAST(date_trunc('second', {column}) AS TEXT) "
                   "|| {format})", '+00:00'),
}
# Backends whose rows keep the datetime of a column (``_iso_seconds``, T).
_AS_DATETIME = frozenset(['postgresql'])


@compiler.compiles(_iso_seconds)
def _iso_seconds_sql(element, sql_compiler, **kw):
    column = sql_compiler.process(element.clauses, **kw)
    dialect = sql_compiler.dialect.name
    if element.separator == 'T' and dialect in _AS_DATETIME:
        return column
    call, iso_format = _ISO_SQL[dialect]
    if dialect in _AS_DATETIME:
        # Only the spaced form comes here, and DateStyle ISO has the space.
        text = iso_format
    else:
        text = iso_format % element.separator
    # The format as a parameter: a literal '%' would need escaping for
    # drivers whose parameters are written with '%'.
    return call.format(
        column=column,
        format=sql_compiler.process(sa.literal(text), **kw))


def rendered(columns, spaced=False):
    """``columns`` to select for an answer: each timestamp column as its
    API text (``_iso_seconds``; ``spaced``: a space between date and
    time) under its own name, the others as they are."""
    iso = _iso_seconds_spaced if spaced else _iso_seconds
    return [iso(column).label(column.name)
            if isinstance(column.type, sa.DateTime) else column
            for column in columns]


def _comparable(column):
    """``column``, or for a string column its code point form."""
    if isinstance(column.type, sa.String):
        return _by_code_point(column)
    return column


def storable(value):
    """Whether every backend can take ``value`` as a query parameter.

    PostgreSQL's text holds no NUL character, and psycopg2 refuses a string
    parameter with one (a ValueError: a 500) where SQLite and MariaDB only
    find nothing. No stored string has one (the API refuses NUL in what it
    writes), so looking such a value up finds nothing, on every backend,
    without asking the database.
    """
    return not (isinstance(value, str) and '\x00' in value)


def read(context, query, plain=False):
    """Every row of ``query`` as read-only Core rows, run on the session's
    connection: the ORM's result handling (identity map, entity loading)
    costs more per row than the driver does, for rows that only render.
    With ``plain``, a ``lean.Page`` of tuples (``fields_of`` names their
    columns).
    """
    return lean.read(context.session.connection(), query, plain=plain)


def fields_of(page):
    """The names of the columns of ``page``, rows of ``read`` (plain or
    not); None when it has no row."""
    if isinstance(page, lean.Page):
        return page.fields
    return page[0]._fields if page else None


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
    row = None
    if storable(value):
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


def touched(column, now):
    """A value to SET timestamp ``column`` to that is never the one it
    holds: ``now``, or a microsecond later when it holds ``now`` already.

    It makes an UPDATE a lock that a Galera cluster sees. Galera holds a
    row lock on its own node only, and certifies at commit the rows a
    transaction wrote, never those it merely locked (SELECT ... FOR
    UPDATE), nor those an UPDATE matched without changing (MariaDB logs
    no row then). Two transactions that lock the same row on two nodes
    by writing it conflict at commit: one is refused with a deadlock
    error, and its writer (``cyborg.db.api.writer``) runs it again.
    """
    return sa.case((column == now, now + _MICROSECOND), else_=now)


def destroy(context, model, uuid):
    """Delete the row with ``uuid``; the database cascades to dependent rows.

    :raises: cyborg.exception.ResourceNotFound
    """
    # A bulk DELETE leaves ON DELETE CASCADE / SET NULL to the database.
    if not storable(uuid) or context.session.execute(
            sa.delete(model).where(model.uuid == uuid)).rowcount == 0:
        raise exception.ResourceNotFound(resource=model.__name__,
                                         key='uuid', value=uuid)


def page(context, model, query, columns, filters=None, limit=None,
         marker=None, sort_key='id', sort_dir='asc'):
    """Add exact-match filters, a stable order, a marker and a limit to ``query``.

    ``query`` selects from ``model`` (possibly joined to other tables) and
    ``columns`` maps each name a caller may filter or sort on to its column.
    A filter value that is a list, tuple or set matches any of its members;
    None matches NULL; a value no backend can store (``storable``) matches
    nothing. ``marker`` is the uuid of the last row of the
    previous page. Rows are ordered by ``sort_key`` then ``id``, NULLs
    first in ascending order, strings by code point (case-sensitively), the
    same on every backend.

    :raises: cyborg.exception.InvalidParameterValue on an unknown filter,
        sort key, sort direction or marker.
    """
    query = _filtered(query, columns, filters)
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
    query = query.order_by(*_order(model, sort_column, sort_key, sort_dir,
                                   nullable))
    if limit is not None:
        query = query.limit(limit)
    return query


def _filtered(query, columns, filters):
    """``query`` with the exact-match ``filters`` of ``page``."""
    for name, value in (filters or {}).items():
        column = _column(columns, name, 'filter')
        if isinstance(value, (list, tuple, set, frozenset)):
            query = query.where(column.in_(
                [member for member in value if storable(member)]))
        elif not storable(value):
            query = query.where(sa.false())
        elif value is None:
            query = query.where(column.is_(None))
        else:
            query = query.where(column == value)
    return query


def _order(model, sort_column, sort_key, sort_dir, nullable):
    """The ORDER BY of ``page``: NULLs first, the sort column compared the
    same on every backend, then ``id`` to make the order total."""
    order = []
    if nullable:
        # 0 for NULL, 1 otherwise: portable "NULLS FIRST" (MySQL has no syntax).
        order.append(sa.case((sort_column.is_(None), 0), else_=1))
    order.append(_comparable(sort_column))
    if sort_key != 'id':
        order.append(model.id)
    direction = sa.asc if sort_dir == 'asc' else sa.desc
    return [direction(item) for item in order]


def _column(columns, name, purpose):
    try:
        return columns[name]
    except KeyError:
        raise exception.InvalidParameterValue(
            err='Invalid %s %s' % (purpose, name)) from None


def _after_marker(context, model, query, sort_column, sort_dir, nullable,
                  marker):
    """A condition selecting the rows that sort after the marker row."""
    if not storable(marker):
        raise exception.InvalidParameterValue(
            err='Marker %s was not found' % marker)
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
    comparable = _comparable(sort_column)
    value_after = (comparable > marker_value if ascending
                   else comparable < marker_value)
    conditions = [value_after,
                  sa.and_(comparable == marker_value, id_after)]
    if nullable and not ascending:
        # Descending puts NULLs last: they all follow a non-NULL marker.
        conditions.append(sort_column.is_(None))
    return sa.or_(*conditions)
