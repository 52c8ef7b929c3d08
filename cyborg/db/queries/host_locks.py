"""Queries of the host_locks table: a row lock per host, held to commit.

``cyborg.conductor.inventory_report`` says why a report needs the lock
and where in its transaction it takes it; an API write of attributes
(``cyborg.conductor.attributes``) takes the lock of a host that has
reported, without making or touching its row.
"""

import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects import sqlite

from cyborg.db import api as db_api
from cyborg.db import models

HostLock = models.HostLock.__table__


def lock_host(context, host, now):
    """Lock the row of ``host`` until the caller's transaction ends.

    One statement on every backend: an insert of the row that, when it
    exists already, updates it instead, which locks the row exactly like
    an UPDATE (a concurrent first insert of the same host waits too). It
    is only a lock inside a write transaction that the caller has begun,
    so it refuses to run outside one.
    """
    _require_transaction(context, 'lock_host')
    _upsert(context, host, now)


def lock_reported(context, host):
    """Lock the row of ``host`` until the caller's transaction ends, if
    the host has one (an inventory report of it was applied); nothing is
    written. One locking read (SQLite's one writer at a time serializes
    without it).
    """
    _require_transaction(context, 'lock_reported')
    _lock_existing(context, host)


def _require_transaction(context, name):
    """A lock is only a lock inside the caller's write transaction: alone
    it would be released at once."""
    if getattr(context, 'transaction_ctx', None) is None:
        raise RuntimeError('%s outside a write transaction would release '
                           'its lock at once' % name)


@db_api.writer
def _lock_existing(context, host):
    context.session.execute(sa.select(HostLock.c.host).where(
        HostLock.c.host == host).with_for_update())


@db_api.writer
def _upsert(context, host, now):
    dialect = context.session.get_bind().dialect.name
    values = {'host': host, 'created_at': now}
    if dialect == 'mysql':
        statement = mysql.insert(HostLock).values(values)
        statement = statement.on_duplicate_key_update(updated_at=now)
    elif dialect in ('postgresql', 'sqlite'):
        insert = (postgresql.insert if dialect == 'postgresql'
                  else sqlite.insert)
        statement = insert(HostLock).values(values)
        statement = statement.on_conflict_do_update(
            index_elements=['host'], set_={'updated_at': now})
    else:
        raise NotImplementedError('No host lock for %s' % dialect)
    context.session.execute(statement)
