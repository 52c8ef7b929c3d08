"""Queries of the host_locks table: a row lock per host, held to commit,
and the digest of the host's last report.

``cyborg.conductor.inventory_report`` says why a report needs the lock
and where in its transaction it takes it; an API write of attributes
(``cyborg.conductor.attributes``) takes the lock of a host that has
reported, without making its row. ``cyborg.conductor.report_digest``
says what the digest is for: ``in_step`` is the one statement an
unchanged report costs; ``forget`` is how a writer other than the report
makes the host's next report an applied one.
"""

import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects import sqlite

from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.db.queries import rows

HostLock = models.HostLock.__table__


def lock_host(context, host, now, digest=None):
    """Lock the row of ``host`` until the caller's transaction ends.

    One statement on every backend: an insert of the row that, when it
    exists already, updates it instead, which locks the row exactly like
    an UPDATE (a concurrent first insert of the same host waits too). It
    is only a lock inside a write transaction that the caller has begun,
    so it refuses to run outside one. The row gets ``digest`` (the
    report's, or None) as its ``report_digest``, not yet synced.
    """
    _require_transaction(context, 'lock_host')
    _upsert(context, host, now, digest)


def lock_reported(context, host):
    """Lock the row of ``host`` until the caller's transaction ends, if
    the host has one (an inventory report of it was applied), and forget
    its report's digest: the caller changes what the next report checks.

    One UPDATE (SQLite's one writer at a time serializes without it) that
    always changes the row (``forget``): a Galera cluster certifies only
    the rows a transaction wrote, so a report or another API write of the
    host on another node conflicts with this one at commit and one of
    them is run again; an UPDATE that changed nothing would let both
    commit.
    """
    _require_transaction(context, 'lock_reported')
    forget(context, host)


@db_api.writer
def forget(context, host):
    """Clear the report digest of ``host``: its next report is applied in
    full and Placement synced after it. One statement, in the caller's
    transaction when there is one, that changes the row even when the
    digest is cleared already: ``updated_at`` becomes now, never the time
    it holds (``rows.touched``)."""
    context.session.execute(sa.update(HostLock).where(
        HostLock.c.host == host).values(
            report_digest=None, report_synced_at=None,
            updated_at=rows.touched(HostLock.c.updated_at,
                                    models.utcnow())))


@db_api.reader
def in_step(context, host, digest, synced_since):
    """Whether the last report applied for ``host`` had ``digest`` and
    Placement was brought in step after it at ``synced_since`` or later.
    One statement."""
    return context.session.execute(sa.select(HostLock.c.host).where(
        HostLock.c.host == host, HostLock.c.report_digest == digest,
        HostLock.c.report_synced_at >= synced_since)).first() is not None


@db_api.writer
def mark_synced(context, host, digest, now):
    """Record that Placement is in step with the report of ``digest``,
    unless something applied or changed since (the digest is no longer
    there). One statement."""
    context.session.execute(sa.update(HostLock).where(
        HostLock.c.host == host,
        HostLock.c.report_digest == digest).values(report_synced_at=now))


def _require_transaction(context, name):
    """A lock is only a lock inside the caller's write transaction: alone
    it would be released at once."""
    if getattr(context, 'transaction_ctx', None) is None:
        raise RuntimeError('%s outside a write transaction would release '
                           'its lock at once' % name)


@db_api.writer
def _upsert(context, host, now, digest):
    dialect = context.session.get_bind().dialect.name
    values = {'host': host, 'created_at': now, 'report_digest': digest}
    changes = {'updated_at': now, 'report_digest': digest,
               'report_synced_at': None}
    if dialect == 'mysql':
        statement = mysql.insert(HostLock).values(values)
        statement = statement.on_duplicate_key_update(**changes)
    elif dialect in ('postgresql', 'sqlite'):
        insert = (postgresql.insert if dialect == 'postgresql'
                  else sqlite.insert)
        statement = insert(HostLock).values(values)
        statement = statement.on_conflict_do_update(
            index_elements=['host'], set_=changes)
    else:
        raise NotImplementedError('No host lock for %s' % dialect)
    context.session.execute(statement)
