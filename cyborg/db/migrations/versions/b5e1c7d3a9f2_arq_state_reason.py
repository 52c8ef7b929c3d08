"""ARQ state reason: why an ARQ's last bind failed.

One nullable column on ``extended_accelerator_requests``, NULL on every
existing row (a BindFailed ARQ from before simply gives no reason), so the
migration is safe on any data.

Revision ID: b5e1c7d3a9f2
Revises: a8d2f6c4e9b1
Create Date: 2026-11-26
"""

from alembic import op
import sqlalchemy as sa

revision = 'b5e1c7d3a9f2'
down_revision = 'a8d2f6c4e9b1'
branch_labels = None
depends_on = None

TABLE = 'extended_accelerator_requests'


def upgrade():
    op.add_column(TABLE, sa.Column('state_reason', sa.String(255),
                                   nullable=True))
