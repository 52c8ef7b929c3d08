"""Queries of the services table: heartbeats of conductors and agents."""

import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects import sqlite

from cyborg.db import api as db_api
from cyborg.db import models


@db_api.writer
def record_heartbeat(context, host, binary, topic, now):
    """Create or bump the (host, binary) row in one statement; return the row.

    The insert-or-update is a single statement on every backend, so two
    heartbeats racing for a new row neither fail nor lose a count.
    """
    values = {'host': host, 'binary': binary, 'topic': topic,
              'report_count': 1, 'last_seen_up': now, 'created_at': now}
    changes = {'topic': topic,
               'report_count': models.Service.report_count + 1,
               'last_seen_up': now, 'updated_at': now}
    dialect = context.session.get_bind().dialect.name
    if dialect == 'mysql':
        statement = mysql.insert(models.Service).values(values)
        statement = statement.on_duplicate_key_update(changes)
    elif dialect in ('postgresql', 'sqlite'):
        insert = (postgresql.insert if dialect == 'postgresql'
                  else sqlite.insert)
        statement = insert(models.Service).values(values)
        statement = statement.on_conflict_do_update(
            index_elements=['host', 'binary'], set_=changes)
    else:
        raise NotImplementedError('No heartbeat upsert for %s' % dialect)
    context.session.execute(statement)
    return _service_for(context, host, binary)


@db_api.reader
def service_for(context, host, binary):
    """The row of ``binary`` on ``host``, or None."""
    return _service_for(context, host, binary)


@db_api.reader
def check(context):
    """``SELECT 1``: whether the database answers (DatabaseUnavailable
    when not), the cheapest round trip there is."""
    return context.session.execute(sa.text('SELECT 1')).scalar()


@db_api.reader
def all_services(context):
    """Every service row, ordered by binary then host."""
    query = sa.select(models.Service).order_by(
        models.Service.binary, models.Service.host)
    return context.session.scalars(query).all()


def _service_for(context, host, binary):
    query = sa.select(models.Service).where(
        models.Service.host == host, models.Service.binary == binary)
    # The row may be in the session already, older than the upsert.
    query = query.execution_options(populate_existing=True)
    return context.session.scalars(query).one_or_none()
