"""Host locks: a row per host that serializes the host's inventory reports.

A new, empty table; the first report of each host adds its row. Nothing
else changes, so the migration is safe on any existing data.

Revision ID: f3b9d2c7a6e8
Revises: e7c3a9b5d1f4
Create Date: 2026-11-24
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = 'f3b9d2c7a6e8'
down_revision = 'e7c3a9b5d1f4'
branch_labels = None
depends_on = None

# As cyborg.db.models.Timestamp: microseconds on MariaDB and MySQL too.
TIMESTAMP = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                       'mariadb')


def upgrade():
    op.create_table(
        'host_locks',
        sa.Column('created_at', TIMESTAMP, nullable=False),
        sa.Column('updated_at', TIMESTAMP, nullable=True),
        sa.Column('host', sa.String(255), primary_key=True),
        mysql_engine='InnoDB', mysql_charset='utf8mb4')
