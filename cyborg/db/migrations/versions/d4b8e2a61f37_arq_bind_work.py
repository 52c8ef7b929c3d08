"""ARQ bind work: the binder's lease and the pending Nova event.

Revision ID: d4b8e2a61f37
Revises: c1f7a5e3b2d0
Create Date: 2026-11-23
"""

from alembic import op
import sqlalchemy as sa

revision = 'd4b8e2a61f37'
down_revision = 'c1f7a5e3b2d0'
branch_labels = None
depends_on = None

TABLE = 'extended_accelerator_requests'


def upgrade():
    op.add_column(TABLE, sa.Column('bind_owner', sa.String(255),
                                   nullable=True))
    op.add_column(TABLE, sa.Column('bind_lease_expires_at', sa.DateTime(),
                                   nullable=True))
    op.add_column(TABLE, sa.Column('bind_event_pending', sa.Boolean(),
                                   nullable=True))
    op.create_index('arqs_bind_owner_idx', TABLE, ['bind_owner'])
