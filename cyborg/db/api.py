"""Transaction boundaries: the ``reader`` and ``writer`` decorators.

Every query function in ``cyborg.db.queries`` is marked with one of them, so
where a transaction starts and ends is visible at the function. A writer
that is the outermost transaction retries on a DB deadlock by itself.

SQLite (the all-in-one) has one writer at a time: its file databases run in
WAL mode so that readers do not wait for it, a write transaction starts
with ``BEGIN IMMEDIATE`` (it takes the write lock before it reads, so it
waits for another writer instead of failing later on a stale snapshot), a
connection waits up to the busy timeout for that lock, and a writer that
still finds the database locked is retried like a deadlock.

On PostgreSQL an outermost reader runs in autocommit (no BEGIN, no
ROLLBACK at check-in: ``_outermost_read``); writers, and readers inside
a writer, run in the writer's transaction on every backend.

A database server that cannot be reached (stopped, restarting, or it cut
the connection) raises ``cyborg.exception.DatabaseUnavailable`` from the
outermost reader or writer, whichever driver error said so: the API
answers it with 503 and Retry-After, and from the conductor it crosses
RPC with its class. An outermost reader is retried on it a couple of
times, briefly (``READ_RETRIES``): a read is safe to run again. A writer
is not: its commit may have reached the server before the connection
broke. A writer's pooled connection is pinged at checkout (oslo.db's
pool_pre_ping) and replaced if the server dropped it; an outermost
reader's is not pinged, and a read that finds its connection dropped runs
again at once on a new one: either way the first request after the
server is back succeeds. Waits are
bounded: see ``CONNECT_TIMEOUT`` and ``MYSQL_READ_TIMEOUT``.
"""

import functools
import logging
import threading
import time

import sqlalchemy as sa
from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exception
from oslo_db.sqlalchemy import enginefacade

from cyborg import exception
from cyborg.common import outage

LOG = logging.getLogger(__name__)

# This process's outages of the database: every outermost transaction
# counts a failure (DatabaseUnavailable) or ends one; logged there, once
# at each end (cyborg.common.outage).
OUTAGE = outage.Outage('the database')

main_context_manager = enginefacade.transaction_context()

SQLITE_BUSY_TIMEOUT_MS = 30000

# How long a new connection to MariaDB/MySQL or PostgreSQL may take (psycopg2
# would otherwise wait for the operating system's TCP timeout), and how long
# PyMySQL waits for any answer of the server, its greeting included (it
# would otherwise wait forever on a server that accepts connections but is
# hung). [database] connection_parameters overrides either.
CONNECT_TIMEOUT = 5
MYSQL_READ_TIMEOUT = 60

# An outermost reader that lost the database runs again up to READ_RETRIES
# times, READ_RETRY_INTERVAL seconds apart, while less than READ_RETRY_WINDOW
# seconds have passed: a quick failure (refused, connection cut) is worth
# another try, a timeout is not worth waiting for twice.
READ_RETRIES = 2
READ_RETRY_INTERVAL = 0.2
READ_RETRY_WINDOW = 1.0

# Driver error codes of a server that cannot be reached. PyMySQL:
# 2002/2003 cannot connect, 2006 gone away, 2013 lost connection, 2014/2055
# lost while reading or writing, 1053 shutdown in progress, 1927 connection
# killed. PostgreSQL SQLSTATE: class 08 connection exception, 57P01/57P02
# terminated by an administrator or a crash, 57P03 cannot connect now
# (starting up or shutting down).
_MYSQL_UNREACHABLE = frozenset([1053, 1927, 2002, 2003, 2006, 2013, 2014,
                                2055])
_POSTGRESQL_UNREACHABLE = frozenset(['57P01', '57P02', '57P03'])

# Set when this thread is about to begin an outermost writer's transaction:
# on SQLite the next BEGIN of the thread is then BEGIN IMMEDIATE, and only
# that one (a reader it opens on another connection must not wait for it).
_writing = threading.local()

# Connections of an SQLite file database kept open (_pool_sqlite_file).
SQLITE_POOL_SIZE = 10


def _pool_sqlite_file(engine):
    """Keep the connections of an SQLite file in a pool.

    oslo.db gives a file database SQLAlchemy's NullPool, which opens a
    connection (and runs every connect listener: foreign keys, busy
    timeout, WAL) for each transaction and closes it after: on the
    all-in-one that was half of a one-row read and a fifth of a bind's
    CPU. A QueuePool of the same creator and listeners (``recreate``'s
    arguments, the pool class aside) keeps SQLITE_POOL_SIZE connections
    open; more are opened as threads need them and closed when given
    back. sqlite3 connections of a file database may change threads
    (SQLAlchemy opens them with ``check_same_thread`` off), and each is
    rolled back when given back, as before.
    """
    if (not isinstance(engine.pool, sa.pool.NullPool)
            or engine.url.database in (None, '', ':memory:')):
        return
    old = engine.pool
    engine.pool = sa.pool.QueuePool(
        old._creator, pool_size=SQLITE_POOL_SIZE, max_overflow=-1,
        recycle=old._recycle, echo=old.echo,
        logging_name=old._orig_logging_name,
        reset_on_return=old._reset_on_return, pre_ping=old._pre_ping,
        _dispatch=old.dispatch, dialect=old._dialect)
    old.dispose()


def _tune_sqlite(engine):
    if engine.dialect.name != 'sqlite':
        return
    _pool_sqlite_file(engine)

    # oslo.db's 'begin' listener emits a plain BEGIN unless the connection
    # is marked as in a transaction already; a writer's connection is given
    # its BEGIN IMMEDIATE (straight on the DBAPI connection) and that mark
    # as soon as it is checked out, before anything begins.
    def _on_engine_connect(connection):
        if (getattr(_writing, 'pending', False)
                and 'in_transaction' not in connection.info):
            _writing.pending = False
            connection.connection.dbapi_connection.execute('BEGIN IMMEDIATE')
            connection.info['in_transaction'] = True

    def _on_checkin(dbapi_connection, connection_record):
        # Returned to the pool (and rolled back): no transaction any more.
        connection_record.info.pop('in_transaction', None)

    sa.event.listen(engine, 'engine_connect', _on_engine_connect)
    sa.event.listen(engine.pool, 'checkin', _on_checkin)

    @sa.event.listens_for(engine, 'connect')
    def _on_connect(dbapi_connection, connection_record):
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute('PRAGMA busy_timeout = %d' % SQLITE_BUSY_TIMEOUT_MS)
            if engine.url.database not in (None, '', ':memory:'):
                cursor.execute('PRAGMA journal_mode = WAL')
        finally:
            cursor.close()


main_context_manager.append_on_engine_create(_tune_sqlite)


def _bound_connect(engine):
    if engine.dialect.name not in ('mysql', 'postgresql'):
        return

    @sa.event.listens_for(engine, 'do_connect')
    def _on_do_connect(dialect, connection_record, cargs, cparams):
        cparams.setdefault('connect_timeout', CONNECT_TIMEOUT)
        if engine.dialect.name == 'mysql':
            cparams.setdefault('read_timeout', MYSQL_READ_TIMEOUT)
            cparams.setdefault('write_timeout', MYSQL_READ_TIMEOUT)


main_context_manager.append_on_engine_create(_bound_connect)


def _set_on_connect(engine, dialect, statement):
    """Have every connection of ``engine``, when its dialect is ``dialect``,
    run ``statement`` (a session setting) as it opens, committed (on
    PostgreSQL a SET rolled back is undone).

    oslo.db opened a test connection before the engine's hooks ran, which
    waits in the pool without the setting: the pool is emptied, so that
    every connection from now on is new.
    """
    if engine.dialect.name != dialect:
        return

    @sa.event.listens_for(engine, 'connect')
    def _on_connect(dbapi_connection, connection_record):
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(statement)
        finally:
            cursor.close()
        dbapi_connection.commit()

    engine.dispose()


def _long_group_concat(engine):
    """MariaDB/MySQL sessions whose GROUP_CONCAT is not cut short.

    A deployable's ``attributes_list`` is aggregated by GROUP_CONCAT
    (``cyborg.db.queries.deployable_filters``), which stops silently at
    ``group_concat_max_len`` bytes: 1 MiB on MariaDB, 1 KiB on MySQL.
    1 GiB is the most MariaDB takes (and what max_allowed_packet allows).
    """
    _set_on_connect(engine, 'mysql',
                    'SET SESSION group_concat_max_len = 1073741824')


main_context_manager.append_on_engine_create(_long_group_concat)


def _iso_datestyle(engine):
    """PostgreSQL sessions that write timestamps as ISO text.

    The device profile list reads its timestamps as text cast from the
    column (``cyborg.db.queries.rows``: five times cheaper than
    ``to_char``), whose form is the session's ``DateStyle``: ISO
    (``YYYY-MM-DD HH:MM:SS``), PostgreSQL's default, whatever the server
    or the database was configured with.
    """
    _set_on_connect(engine, 'postgresql', "SET DateStyle = 'ISO, MDY'")


main_context_manager.append_on_engine_create(_iso_datestyle)


def _utf8mb4(engine):
    """MariaDB/MySQL connections in utf8mb4, the character set of the tables.

    oslo.db asks for ``charset=utf8`` (three-byte utf8mb3) when the URL
    names none: a character beyond the Basic Multilingual Plane (an emoji)
    is then refused by an insert ("Incorrect string value") and fails any
    comparison with a column ("Illegal mix of collations"), a 500 on
    MariaDB only. utf8mb4 holds every utf8 text, so a URL's ``utf8`` is
    raised to it as well.
    """
    if engine.dialect.name != 'mysql':
        return

    @sa.event.listens_for(engine, 'do_connect')
    def _on_do_connect(dialect, connection_record, cargs, cparams):
        if str(cparams.get('charset', 'utf8')).lower() in ('utf8',
                                                           'utf8mb3'):
            cparams['charset'] = 'utf8mb4'

    # oslo.db's first test connection, made before this hook, waits in the
    # pool in utf8mb3: it is closed, and every connection from now on is new.
    engine.dispose()


main_context_manager.append_on_engine_create(_utf8mb4)


def _driver_error(error):
    """The driver's own exception inside ``error``, or None."""
    if isinstance(error, db_exception.DBError):
        error = error.inner_exception
    return getattr(error, 'orig', None)


def unreachable_reason(error):
    """Why ``error`` means the database cannot be reached, or None if not.

    oslo.db turns most such failures into DBConnectionError, but not all:
    psycopg2's "connection refused" and a server that is starting up or
    shutting down come through as SQLAlchemy's OperationalError.
    """
    driver_error = _driver_error(error)
    if isinstance(error, db_exception.DBConnectionError):
        return _describe(driver_error or error)
    wrapped = (error.inner_exception
               if isinstance(error, db_exception.DBError) else error)
    if not isinstance(wrapped, sa.exc.DBAPIError):
        return None
    if wrapped.connection_invalidated or isinstance(
            wrapped, sa.exc.InterfaceError):
        return _describe(driver_error or wrapped)
    if not isinstance(wrapped, sa.exc.OperationalError):
        return None
    code = _driver_code(driver_error)
    if code in _MYSQL_UNREACHABLE or code in _POSTGRESQL_UNREACHABLE or (
            isinstance(code, str) and code.startswith('08')):
        return _describe(driver_error)
    # psycopg2 gives no SQLSTATE when libpq itself failed: no connection.
    if code is None and type(driver_error).__module__.startswith('psycopg'):
        return _describe(driver_error)
    return None


def _driver_code(driver_error):
    code = getattr(driver_error, 'pgcode', None) or getattr(
        driver_error, 'sqlstate', None)
    if code is None:
        arguments = getattr(driver_error, 'args', ())
        if arguments and isinstance(arguments[0], int):
            code = arguments[0]
    return code


def _describe(driver_error):
    # The class and code only: the driver's text names hosts and ports,
    # which the API's client has no business seeing.
    code = _driver_code(driver_error)
    name = type(driver_error).__name__
    return ('%s %s' % (name, code) if code is not None else name) + \
        '; retry later'


def _translated(error):
    reason = unreachable_reason(error)
    if reason is None:
        return None
    return exception.DatabaseUnavailable(reason=reason)


def _sqlite_locked(error):
    """Whether ``error`` is SQLite refusing a write because of another writer."""
    cause = getattr(error, 'inner_exception', None) or error
    return (isinstance(error, (db_exception.DBError, sa.exc.OperationalError))
            and 'database is locked' in str(cause))


def configure(conf, wait_for_database=True):
    """Point the engine facade at ``conf.database`` (once per process).

    ``wait_for_database``: whether the engine's first start tries to
    connect [database] max_retries times, retry_interval seconds apart
    (oslo.db's wait for a database that starts after the service). The
    API passes False: that start happens inside its first request, which
    must answer 503 at once rather than wait for the database.
    """
    options = _engine_options(conf)
    if not wait_for_database:
        options['max_retries'] = 0
    main_context_manager.configure(**options)


def _engine_options(conf):
    options = dict(conf.database.items())
    # enginefacade takes these names; oslo.db's option group has a few extra.
    allowed = {'connection', 'slave_connection', 'sqlite_fk', 'mysql_sql_mode',
               'mysql_wsrep_sync_wait', 'mysql_enable_ndb', 'connection_recycle_time',
               'connection_debug', 'max_pool_size', 'max_overflow', 'pool_timeout',
               'connection_trace', 'max_retries', 'retry_interval',
               'connection_parameters', 'db_max_retries', 'db_retry_interval',
               'db_inc_retry_interval', 'db_max_retry_interval', 'sqlite_synchronous',
               'use_db_reconnect', 'backend', 'asyncio_connection',
               'asyncio_slave_connection'}
    options = {k: v for k, v in options.items() if k in allowed}
    options['sqlite_fk'] = True
    # oslo.db's sleep(0) at every connection check-in yields to eventlet's
    # other green threads; the services run on native threads.
    options['thread_checkin'] = False
    return options


def get_engine():
    """The writer engine of this process."""
    return main_context_manager.writer.get_engine()


def reader(function):
    """Run ``function(context, ...)`` in a read transaction, retried briefly
    when the database cannot be reached.

    :raises: cyborg.exception.DatabaseUnavailable (outermost reader only)
    """
    transactional = main_context_manager.reader(function)
    outermost = main_context_manager.reader(_outermost_read(function))

    @functools.wraps(function)
    def run(context, *args, **kwargs):
        if getattr(context, 'transaction_ctx', None) is not None:
            return transactional(context, *args, **kwargs)
        return _translating(_retrying_read, outermost, context, *args,
                            **kwargs)

    return run


def _outermost_read(function):
    """``function`` run, on PostgreSQL, without BEGIN and ROLLBACK, on a
    connection the pool hands over without pinging it.

    The pool's ping is a round trip on every checkout, a tenth of a small
    read, that finds a connection the server dropped (restarted, or closed
    an idle one) before it is used. A reader needs no such warning: a
    statement on such a connection fails as a disconnect, the pool then
    drops every connection it held before, and the read runs again at
    once (``_retrying_read``). A writer, which is not run again, still
    has its connection pinged.

    PostgreSQL's default isolation (READ COMMITTED) takes a new snapshot for
    each statement, so a read-only transaction gives its statements nothing
    that autocommit does not; its BEGIN and the pool's ROLLBACK at check-in
    are two round trips of the four a one-statement read costs (the pool's
    ping and the statement are the other two). Changing the mode of a
    psycopg connection is a client-side setting: the pool puts it back at
    check-in without a round trip. MariaDB's REPEATABLE READ gives a reader
    one snapshot for all its statements, and switching its autocommit is a
    round trip each way: readers there keep their transaction, as on SQLite.
    """
    @functools.wraps(function)
    def run(context, *args, **kwargs):
        session = context.session
        options = (_AUTOCOMMIT if session.get_bind().dialect.name
                   == 'postgresql' else None)
        _reading.checkout = True
        try:
            session.connection(execution_options=options)
        finally:
            _reading.checkout = False
        return function(context, *args, **kwargs)

    return run


_AUTOCOMMIT = {'isolation_level': 'AUTOCOMMIT'}

# Set while an outermost reader checks its connection out of the pool.
_reading = threading.local()


def _reader_skips_ping(engine):
    """The pool's ping of ``engine``, skipped for an outermost reader's
    checkout (``_outermost_read``)."""
    ping = engine.dialect.do_ping

    def do_ping(dbapi_connection):
        if getattr(_reading, 'checkout', False):
            return True
        return ping(dbapi_connection)

    engine.dialect.do_ping = do_ping


main_context_manager.append_on_engine_create(_reader_skips_ping)


def _server_ended_is_disconnect(engine):
    """A PostgreSQL connection the server ended (``57P01`` terminated by
    an administrator or a failover, ``57P02`` crash, ``57P03`` shutting
    down) is a disconnect: SQLAlchemy then drops it and the pool's older
    connections, and the read runs again at once on a new one.

    psycopg counts it as one only once it has seen the socket close; the
    server's error may come first, and the connection would go back to
    the pool, dead, for the next read to fail on again.
    """
    if engine.dialect.name != 'postgresql':
        return
    is_disconnect = engine.dialect.is_disconnect

    def server_ended(error, connection, cursor):
        return (_driver_code(error) in _POSTGRESQL_UNREACHABLE
                or is_disconnect(error, connection, cursor))

    engine.dialect.is_disconnect = server_ended


main_context_manager.append_on_engine_create(_server_ended_is_disconnect)


def _stale_connection(error):
    """Whether ``error`` is a pooled connection the server had dropped
    (the pool has replaced it and every older one)."""
    wrapped = (error.inner_exception
               if isinstance(error, db_exception.DBError) else error)
    return getattr(wrapped, 'connection_invalidated', False)


def _retrying_read(transactional, context, *args, **kwargs):
    # Not oslo.db's wrap_db_retry: at its limit it logs a traceback, and an
    # unreachable database is logged once, by whoever answers for it.
    started = time.monotonic()
    for attempt in range(READ_RETRIES + 1):
        try:
            return transactional(context, *args, **kwargs)
        except Exception as error:
            if (attempt == READ_RETRIES
                    or time.monotonic() - started > READ_RETRY_WINDOW
                    or unreachable_reason(error) is None):
                raise
            LOG.debug('Database unreachable (%s); reading again', error)
            # A dropped pooled connection is replaced already: at once.
            at_once = attempt == 0 and _stale_connection(error)
        if not at_once:
            time.sleep(READ_RETRY_INTERVAL)


def _translating(call, *args, **kwargs):
    """``call(...)``, with an unreachable database as DatabaseUnavailable
    (the driver's error as its cause), counted in ``OUTAGE``; a success
    ends an outage."""
    try:
        result = call(*args, **kwargs)
    except Exception as error:
        unavailable = _translated(error)
        if unavailable is None:
            raise
        cause = error
    else:
        OUTAGE.answered()
        return result
    # Out of the except clause: oslo.log would add the driver's error to
    # the outage's warning.
    OUTAGE.failed(unavailable)
    raise unavailable from cause


def writer(function):
    """Run ``function(context, ...)`` in a write transaction, retried on deadlock.

    :raises: cyborg.exception.DatabaseUnavailable (outermost writer only)
    """
    transactional = main_context_manager.writer(function)

    def attempt(context, *args, **kwargs):
        outer = getattr(_writing, 'pending', False)
        _writing.pending = True
        try:
            return transactional(context, *args, **kwargs)
        finally:
            _writing.pending = outer

    retrying = oslo_db_api.wrap_db_retry(
        max_retries=5, retry_on_deadlock=True,
        exception_checker=_sqlite_locked)(attempt)

    @functools.wraps(function)
    def run(context, *args, **kwargs):
        # Only the outermost transaction may retry: an inner one re-running
        # would repeat work inside a transaction the database rolled back.
        if getattr(context, 'transaction_ctx', None) is not None:
            return transactional(context, *args, **kwargs)
        return _translating(retrying, context, *args, **kwargs)

    return run
