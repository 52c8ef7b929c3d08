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
"""

import functools
import threading

import sqlalchemy as sa
from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exception
from oslo_db.sqlalchemy import enginefacade

main_context_manager = enginefacade.transaction_context()

SQLITE_BUSY_TIMEOUT_MS = 30000

# Set when this thread is about to begin an outermost writer's transaction:
# on SQLite the next BEGIN of the thread is then BEGIN IMMEDIATE, and only
# that one (a reader it opens on another connection must not wait for it).
_writing = threading.local()


def _tune_sqlite(engine):
    if engine.dialect.name != 'sqlite':
        return

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


def _sqlite_locked(error):
    """Whether ``error`` is SQLite refusing a write because of another writer."""
    cause = getattr(error, 'inner_exception', None) or error
    return (isinstance(error, (db_exception.DBError, sa.exc.OperationalError))
            and 'database is locked' in str(cause))


def configure(conf):
    """Point the engine facade at ``conf.database`` (once per process)."""
    main_context_manager.configure(**_engine_options(conf))


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
    return options


def get_engine():
    """The writer engine of this process."""
    return main_context_manager.writer.get_engine()


def reader(function):
    """Run ``function(context, ...)`` in a read transaction."""
    return main_context_manager.reader(function)


def writer(function):
    """Run ``function(context, ...)`` in a write transaction, retried on deadlock."""
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
        return retrying(context, *args, **kwargs)

    return run
