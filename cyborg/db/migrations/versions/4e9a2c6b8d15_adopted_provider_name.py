"""The Placement name a deployable's provider was adopted under.

One nullable column, ``deployables.provider_name``: the name of the
resource provider the deployable took over from an OpenStack Cyborg
deployment (``cyborg-dbsync import-upstream``), which Nova's allocations
and the operator's flavors already know. NULL, on every existing row and
on every deployable this service creates, means the provider is named as
this service names them (``<host>_<deployable name>``), so the migration
is safe on any data. The downgrade drops it: the adopted providers keep
their names in Placement, which a sync never renames.

Revision ID: 4e9a2c6b8d15
Revises: 9c4e1a7f3b25
Create Date: 2026-12-07
"""

from alembic import op
import sqlalchemy as sa

revision = '4e9a2c6b8d15'
down_revision = '9c4e1a7f3b25'
branch_labels = None
depends_on = None


def upgrade():
    op.add_column('deployables',
                  sa.Column('provider_name', sa.String(255), nullable=True))


def downgrade():
    op.drop_column('deployables', 'provider_name')
