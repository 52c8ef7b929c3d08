"""Health and drain of devices and deployables.

Five columns on both ``devices`` and ``deployables``: ``health`` (NOT NULL,
``healthy`` on every existing row, by a server default), ``health_reason``
and ``health_since`` (NULL), ``healthy_reports`` (NOT NULL, 0) and
``drain_since`` (NULL: nothing is drained), and an index on ``health`` of
each (the API filters by it). Existing rows read as healthy and not
drained, which is what they were, so the migration is safe on any data.
The downgrade drops the columns and indexes.

Revision ID: 6b2d4f8a0c13
Revises: 5a7c3e9d1b42
Create Date: 2026-12-07
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '6b2d4f8a0c13'
down_revision = '5a7c3e9d1b42'
branch_labels = None
depends_on = None

TABLES = ('devices', 'deployables')
# As cyborg.db.models.Timestamp: microseconds on MariaDB and MySQL too.
TIMESTAMP = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                       'mariadb')


def _columns():
    return (
        sa.Column('health', sa.String(16), nullable=False,
                  server_default='healthy'),
        sa.Column('health_reason', sa.String(255), nullable=True),
        sa.Column('health_since', TIMESTAMP, nullable=True),
        sa.Column('healthy_reports', sa.Integer, nullable=False,
                  server_default='0'),
        sa.Column('drain_since', TIMESTAMP, nullable=True),
    )


def upgrade():
    for table in TABLES:
        for column in _columns():
            op.add_column(table, column)
        op.create_index('%s_health_idx' % table, table, ['health'])


def downgrade():
    for table in TABLES:
        op.drop_index('%s_health_idx' % table, table_name=table)
        for column in reversed(_columns()):
            op.drop_column(table, column.name)
