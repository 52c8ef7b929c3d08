"""A list page's SELECT run on the DBAPI cursor, its rows SQLAlchemy's own.

``Connection.execute`` costs a statement more than the driver does: an
execution context, a cursor result and its row getter are set up for every
call (0.3 ms of CPU a call on PostgreSQL, a fifth of a 1,000-row device
page's floor). A page's statement has neither bind nor result processors
(its values go to the driver as they are, its columns come back as the
driver gives them), so once SQLAlchemy has run a statement of that shape,
what it learnt is kept: the compiled statement (SQLAlchemy's own compiled
form, from a cache of this module's) and the function that makes its
rows. Then each call builds the parameters, runs the SQL on the
connection's DBAPI cursor and makes the same read-only ``Row`` objects
SQLAlchemy would. ``before_cursor_execute`` and ``after_cursor_execute``
listeners are called as SQLAlchemy calls them (the statement counts of the
tests and benchmarks see every statement), and a driver's error is
SQLAlchemy's to handle: it wraps it, oslo.db translates it, a dropped
connection is invalidated (``db_api._retrying_read`` reads again).

A list that only renders its rows asks for a ``Page`` (``plain``): the
driver's own tuples with the names of their columns, no ``Row`` made per
row (a tenth of a millisecond per 1,000 rows, and reading a ``Row`` by
position costs more than reading a tuple); on SQLAlchemy's path, its rows.

A statement that needs what this skips (bind or result processors,
expanding or literal parameters, escaped parameter names, a schema
translation, row logging) is run by ``Connection.execute`` every time.
This leans on attributes of SQLAlchemy's that are not public API:
``test_lean_reads`` holds every list to this path on each backend, so an
upgrade of SQLAlchemy that changes them fails there, not silently.
"""

import collections
import functools

from sqlalchemy import util as sa_util

# Compiled statements by dialect and cache key (SQLAlchemy's key): page
# shapes are few, this bounds what an unusual mix of filters can add.
_COMPILED = sa_util.LRUCache(500)
# The _Shape of each compiled statement's first run. (Dict operations are
# atomic: two threads at most both learn the same thing.)
_SHAPES = {}
_SHAPES_LIMIT = 1000


class _Shape:
    """What a compiled statement's first run taught: the function making
    its rows from the driver's tuples (None when the statement is not
    lean) and the names of its columns."""

    __slots__ = ('make_rows', 'fields')

    def __init__(self, make_rows, fields):
        self.make_rows = make_rows
        self.fields = fields


class Page(list):
    """The rows of one list page as plain tuples (or, off the lean path,
    SQLAlchemy's rows, which unpack alike), the names of their columns in
    ``fields``."""

    __slots__ = ('fields',)

    def __init__(self, rows, fields):
        super().__init__(rows)
        self.fields = fields

    def named(self):
        """The rows as a list of named tuples, their columns attributes
        too, as SQLAlchemy's rows have them (for the rare reader by name:
        a list nests the attributes of a page under their parents)."""
        if not self or hasattr(self[0], '_fields'):
            return list(self)
        make = _named_row(self.fields)
        return [make(row) for row in self]


@functools.lru_cache(maxsize=64)
def _named_row(fields):
    return collections.namedtuple('Row', fields)._make


class _Context:
    """What an ``*_cursor_execute`` listener reads of an execution context."""

    __slots__ = ('cache_hit',)

    def __init__(self, cache_hit):
        self.cache_hit = cache_hit


def _is_lean(compiled):
    return not (compiled.literal_execute_params or compiled.post_compile_params
                or compiled._bind_processors or compiled.escaped_bind_names
                or compiled.schema_translate_map)


def _rows_maker(result):
    """The function making ``result``'s Row objects from the driver's
    tuples, or None when rows need more than that (processors, a tuple
    filter, row logging, scalars)."""
    metadata = result._metadata
    processors = metadata._effective_processors
    if (metadata._tuplefilter is not None
            or (processors and any(processors))
            or result._row_logging_fn is not None
            or result._source_supports_scalars):
        return None
    return result._row_getter[1]


def read(connection, query, plain=False):
    """Every row of ``query`` (a SELECT), as ``connection.execute(query).all()``
    gives them, or with ``plain`` as a ``Page``."""
    dialect = connection.dialect
    compiled, extracted, collected, cache_hit = query._compile_w_cache(
        dialect, compiled_cache=_COMPILED, column_keys=[])
    shape = _SHAPES.get(compiled)
    if shape is None:
        # First run of this compiled statement: SQLAlchemy runs it, and
        # what it set up for its rows is kept when they need nothing more.
        result = connection.execute(query)
        if len(_SHAPES) >= _SHAPES_LIMIT:
            _SHAPES.clear()
        shape = _SHAPES[compiled] = _Shape(
            _rows_maker(result) if _is_lean(compiled) else None,
            tuple(result.keys()))
        return Page(result.all(), shape.fields) if plain else result.all()
    if shape.make_rows is None:
        rows = connection.execute(query).all()
        return Page(rows, shape.fields) if plain else rows
    data = _fetch(connection, compiled.string,
                  _parameters(dialect, compiled, extracted, collected),
                  cache_hit)
    return Page(data, shape.fields) if plain else shape.make_rows(data)


def _parameters(dialect, compiled, extracted, collected):
    """The DB-API parameters of one run of ``compiled``."""
    values = compiled.construct_params(
        extracted_parameters=extracted, escape_names=False,
        _collected_params=collected)
    if compiled.positional:
        return dialect.execute_sequence_format(
            [values[name] for name in compiled.positiontup])
    return values


def _fetch(connection, statement, parameters, cache_hit):
    """Every row the DB-API cursor gives for ``statement``, with the
    engine's cursor events run around it as SQLAlchemy runs them."""
    cursor = connection.connection.cursor()
    context = None
    try:
        dispatch = connection.dispatch
        if dispatch.before_cursor_execute or dispatch.after_cursor_execute:
            context = _Context(cache_hit)
            for listener in dispatch.before_cursor_execute:
                statement, parameters = listener(
                    connection, cursor, statement, parameters, context,
                    False)
        cursor.execute(statement, parameters)
        if context is not None:
            for listener in dispatch.after_cursor_execute:
                listener(connection, cursor, statement, parameters, context,
                         False)
        data = cursor.fetchall()
        cursor.close()
    except BaseException as error:
        # Wrapped, translated (oslo.db's filters) and, for a dropped
        # connection, the pool invalidated; the cursor closed, its own
        # error (a dead connection's) swallowed: raises.
        connection._handle_dbapi_exception(error, statement, parameters,
                                           cursor, None)
    return data
