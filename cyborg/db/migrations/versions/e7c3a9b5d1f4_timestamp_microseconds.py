"""Timestamps keep microseconds on MariaDB and MySQL.

A plain DATETIME there stores whole seconds only, so the binder's timeouts
and leases and the services' heartbeats were up to a second off. Every
timestamp column becomes DATETIME(6), keeping its nullability; values
already stored gain a zero fraction. PostgreSQL's timestamp and SQLite's
text keep microseconds already: nothing changes there.

Revision ID: e7c3a9b5d1f4
Revises: d4b8e2a61f37
Create Date: 2026-11-23
"""

from alembic import op
import sqlalchemy as sa

revision = 'e7c3a9b5d1f4'
down_revision = 'd4b8e2a61f37'
branch_labels = None
depends_on = None

# Every table's timestamp columns at d4b8e2a61f37, with their nullability.
_BASE = (('created_at', False), ('updated_at', True))
TIMESTAMP_COLUMNS = {
    'devices': _BASE,
    'deployables': _BASE,
    'attributes': _BASE,
    'controlpath_ids': _BASE,
    'attach_handles': _BASE,
    'device_profiles': _BASE,
    'extended_accelerator_requests': _BASE + (('bind_lease_expires_at', True),),
    'services': _BASE + (('last_seen_up', True),),
}


def upgrade():
    if op.get_bind().dialect.name not in ('mysql', 'mariadb'):
        return
    # One ALTER per table: MariaDB copies the table for each statement.
    for table, columns in TIMESTAMP_COLUMNS.items():
        changes = ', '.join(
            'MODIFY %s DATETIME(6) %s' % (column,
                                          'NULL' if nullable else 'NOT NULL')
            for column, nullable in columns)
        op.execute(sa.text('ALTER TABLE %s %s' % (table, changes)))
