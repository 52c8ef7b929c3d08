"""A deployable's attributes_list stored on its row, for the lists to read.

``GET /v2/deployables`` aggregated each deployable's attributes into the
JSON text of ``attributes_list`` with a correlated subquery per row, 8-13
ms of the database's time per 1,000 rows. Two columns on ``deployables``
keep a copy that the writers of the attributes table refresh in their
transactions (``cyborg.db.queries.deployable_filters``):
``attributes_list``, the same text (NULL when the deployable has none;
LONGTEXT on MariaDB and MySQL, whose TEXT holds 64 KiB), and
``has_nested_attributes``, whether one of them is nested under another
(NOT NULL, default false).

Every deployable with attributes is filled by one UPDATE with the
aggregation the lists ran (a copy, frozen here, of each backend's
``_ATTRIBUTES_TEXT``), so they show exactly what they showed before. The
migration is safe on any data: it only adds columns and fills them. The
downgrade drops them (SQLite 3.35 or later).

Revision ID: 2efde3974ce5
Revises: 007eb4efa142
Create Date: 2026-11-29
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '2efde3974ce5'
down_revision = '007eb4efa142'
branch_labels = None
depends_on = None

TABLE = 'deployables'
# As cyborg.db.models.AttributesText.
TEXT = sa.Text().with_variant(mysql.LONGTEXT(), 'mysql', 'mariadb')

# cyborg.db.queries.deployable_filters._ATTRIBUTES_TEXT at this revision,
# correlated to the updated row: the JSON text [{"key": "value"}, ...] of
# the deployable's attributes in id order, NULL when it has none.
ATTRIBUTES_TEXT = {
    'sqlite': (
        "(SELECT '[' || group_concat('{' || json_quote(\"key\") || ': ' || "
        "json_quote(value) || '}', ', ') || ']' FROM (SELECT \"key\", value "
        "FROM attributes WHERE deployable_id = deployables.id ORDER BY id))"),
    'mysql': (
        "(SELECT CONCAT('[', GROUP_CONCAT(CONCAT('{', JSON_QUOTE(a.`key`), "
        "': ', COALESCE(JSON_QUOTE(a.value), 'null'), '}') ORDER BY a.id "
        "SEPARATOR ', '), ']') FROM attributes a "
        "WHERE a.deployable_id = deployables.id)"),
    'postgresql': (
        "(SELECT '[' || string_agg('{' || to_json(a.key)::text || ': ' || "
        "COALESCE(to_json(a.value)::text, 'null') || '}', ', ' ORDER BY "
        "a.id) || ']' FROM attributes a "
        "WHERE a.deployable_id = deployables.id)"),
}

BACKFILL = (
    'UPDATE deployables SET attributes_list = %s, '
    'has_nested_attributes = EXISTS (SELECT 1 FROM attributes n '
    'WHERE n.deployable_id = deployables.id '
    'AND n.parent_attribute_id IS NOT NULL) '
    # A deployable without attributes keeps NULL and false.
    'WHERE EXISTS (SELECT 1 FROM attributes e '
    'WHERE e.deployable_id = deployables.id)')


def upgrade():
    op.add_column(TABLE, sa.Column('attributes_list', TEXT, nullable=True))
    op.add_column(TABLE, sa.Column('has_nested_attributes', sa.Boolean(),
                                   nullable=False,
                                   server_default=sa.false()))
    connection = op.get_bind()
    dialect = connection.dialect.name
    if dialect == 'mysql':
        # GROUP_CONCAT stops silently at group_concat_max_len bytes (1 MiB
        # on MariaDB): as long as cyborg.db.api makes it for its sessions.
        connection.execute(sa.text(
            'SET SESSION group_concat_max_len = 1073741824'))
    connection.execute(sa.text(BACKFILL % ATTRIBUTES_TEXT[dialect]))


def downgrade():
    op.drop_column(TABLE, 'has_nested_attributes')
    op.drop_column(TABLE, 'attributes_list')
