"""Deployable programming lock: who programs a deployable, until when.

Two nullable columns on ``deployables`` (``programming_owner``,
``programming_expires_at``), NULL on every existing row: no deployable is being
programmed. Nothing else changes, so the migration is safe on any data.

Revision ID: a8d2f6c4e9b1
Revises: f3b9d2c7a6e8
Create Date: 2026-11-25
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = 'a8d2f6c4e9b1'
down_revision = 'f3b9d2c7a6e8'
branch_labels = None
depends_on = None

# As cyborg.db.models.Timestamp: microseconds on MariaDB and MySQL too.
TIMESTAMP = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                       'mariadb')


def upgrade():
    op.add_column('deployables', sa.Column('programming_owner',
                                           sa.String(255), nullable=True))
    op.add_column('deployables', sa.Column('programming_expires_at',
                                           TIMESTAMP, nullable=True))
