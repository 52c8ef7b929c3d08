"""The history of devices and deployables: an append-only table.

``device_history`` records each program, bind, unbind, delete, enable and
disable of a device or deployable (``cyborg.db.models.HistoryEntry``). A
new, empty table: nothing else changes, so the migration is safe on any
data. The device and deployable are named by plain columns, not foreign
keys, so that history outlives a removed device. On MariaDB and MySQL the
table takes the binary NO PAD collation the other tables have
(007eb4efa142). The downgrade drops the table, and its entries with it.

Revision ID: 5a7c3e9d1b42
Revises: 2efde3974ce5
Create Date: 2026-12-07
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '5a7c3e9d1b42'
down_revision = '2efde3974ce5'
branch_labels = None
depends_on = None

TABLE = 'device_history'
# As cyborg.db.models.Timestamp and BigId.
TIMESTAMP = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql',
                                       'mariadb')
BIG_ID = sa.BigInteger().with_variant(sa.Integer(), 'sqlite')
# As cyborg.db.models.MYSQL_BINARY_COLLATIONS: the first the server has.
COLLATIONS = ('utf8mb4_nopad_bin', 'utf8mb4_0900_bin')


def _mysql_options(connection):
    if connection.dialect.name not in ('mysql', 'mariadb'):
        return {}
    available = set(connection.execute(sa.text(
        "SHOW COLLATION WHERE Charset = 'utf8mb4'")).scalars())
    for collation in COLLATIONS:
        if collation in available:
            return {'mysql_engine': 'InnoDB', 'mysql_charset': 'utf8mb4',
                    'mysql_collate': collation}
    raise RuntimeError('the database server has none of the collations %s'
                       % ', '.join(COLLATIONS))


def upgrade():
    op.create_table(
        TABLE,
        sa.Column('created_at', TIMESTAMP, nullable=False),
        sa.Column('updated_at', TIMESTAMP, nullable=True),
        sa.Column('id', BIG_ID, primary_key=True, autoincrement=True),
        sa.Column('device_id', sa.Integer, nullable=True),
        sa.Column('deployable_id', sa.Integer, nullable=True),
        sa.Column('device_uuid', sa.String(36), nullable=True),
        sa.Column('deployable_uuid', sa.String(36), nullable=True),
        sa.Column('event', sa.String(30), nullable=False),
        sa.Column('outcome', sa.String(30), nullable=False),
        sa.Column('reason', sa.String(255), nullable=True),
        sa.Column('image_id', sa.String(36), nullable=True),
        sa.Column('image_hash', sa.String(128), nullable=True),
        sa.Column('arq_uuid', sa.String(36), nullable=True),
        sa.Column('instance_uuid', sa.String(36), nullable=True),
        sa.Column('arq_project_id', sa.String(255), nullable=True),
        sa.Column('user_id', sa.String(255), nullable=True),
        sa.Column('project_id', sa.String(255), nullable=True),
        sa.Column('request_id', sa.String(255), nullable=True),
        sa.Column('agent', sa.String(255), nullable=True),
        **_mysql_options(op.get_bind()))
    for name, columns in (
            ('device_history_device_id_idx', ['device_id', 'id']),
            ('device_history_deployable_id_idx', ['deployable_id', 'id']),
            ('device_history_device_uuid_idx', ['device_uuid', 'id']),
            ('device_history_deployable_uuid_idx',
             ['deployable_uuid', 'id']),
            ('device_history_created_at_idx', ['created_at'])):
        op.create_index(name, TABLE, columns)


def downgrade():
    # The entries go with the table: nothing else refers to it.
    op.drop_table(TABLE)
