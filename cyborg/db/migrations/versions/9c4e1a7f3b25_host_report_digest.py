"""The digest of each host's last inventory report, to skip unchanged ones.

Two nullable columns on ``host_locks``: ``report_digest``, the digest of
the last report the conductor applied for the host when that report left
nothing to count or keep (``cyborg.conductor.report_digest``), and
``report_synced_at``, when Placement was last brought in step after it.
NULL on every existing row, so the first report of each host after the
upgrade is applied in full, as before; the migration is safe on any data.
The downgrade drops them.

Revision ID: 9c4e1a7f3b25
Revises: 8d5f2b7e4a61
Create Date: 2026-12-07
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '9c4e1a7f3b25'
down_revision = '8d5f2b7e4a61'
branch_labels = None
depends_on = None

# As cyborg.db.models.Timestamp: microseconds on MariaDB and MySQL too.
TIMESTAMP = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                       'mariadb')


def upgrade():
    op.add_column('host_locks',
                  sa.Column('report_digest', sa.String(64), nullable=True))
    op.add_column('host_locks',
                  sa.Column('report_synced_at', TIMESTAMP, nullable=True))


def downgrade():
    op.drop_column('host_locks', 'report_synced_at')
    op.drop_column('host_locks', 'report_digest')
