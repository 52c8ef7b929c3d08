"""Who asked for an ARQ's bind: kept with the bind work for its history.

Three nullable columns on ``extended_accelerator_requests``:
``bind_user_id``, ``bind_project_id`` and ``bind_request_id``, the caller
of the ARQ's last recorded bind (the bind PATCH or os-acc's plug), which
the history entry written when the bind ends names. NULL on every
existing row (a bind recorded before names the binder's context, as
before), so the migration is safe on any data. The downgrade drops them.

Revision ID: 8d5f2b7e4a61
Revises: 6b2d4f8a0c13
Create Date: 2026-12-07
"""

from alembic import op
import sqlalchemy as sa

revision = '8d5f2b7e4a61'
down_revision = '6b2d4f8a0c13'
branch_labels = None
depends_on = None

TABLE = 'extended_accelerator_requests'
COLUMNS = ('bind_user_id', 'bind_project_id', 'bind_request_id')


def upgrade():
    for name in COLUMNS:
        op.add_column(TABLE, sa.Column(name, sa.String(255), nullable=True))


def downgrade():
    for name in reversed(COLUMNS):
        op.drop_column(TABLE, name)
