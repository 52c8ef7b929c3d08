"""Transaction boundaries: the ``reader`` and ``writer`` decorators.

Every query function in ``cyborg.db.queries`` is marked with one of them, so
where a transaction starts and ends is visible at the function. A writer
that is the outermost transaction retries on a DB deadlock by itself.
"""

import functools

from oslo_db import api as oslo_db_api
from oslo_db.sqlalchemy import enginefacade

main_context_manager = enginefacade.transaction_context()


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
    retrying = oslo_db_api.wrap_db_retry(
        max_retries=5, retry_on_deadlock=True)(transactional)

    @functools.wraps(function)
    def run(context, *args, **kwargs):
        # Only the outermost transaction may retry: an inner one re-running
        # would repeat work inside a transaction the database rolled back.
        if getattr(context, 'transaction_ctx', None) is not None:
            return transactional(context, *args, **kwargs)
        return retrying(context, *args, **kwargs)

    return run
