"""Strings compare exactly on MariaDB and MySQL: a binary NO PAD collation.

The tables took the server's default collation (utf8mb4_general_ci on
MariaDB), which ignores case and trailing spaces: a profile ``Case``
conflicted with ``case`` and ``?hostname=HOST`` found ``host``, on MariaDB
only. Every table is converted to utf8mb4 with a binary NO PAD collation
(``utf8mb4_nopad_bin`` on MariaDB, ``utf8mb4_0900_bin`` on MySQL 8.0.17 and
later, whichever the server has), as SQLite and PostgreSQL compare already.
The statements do nothing there.

The conversion is safe on any data. It keeps every value (the tables are
utf8mb4 already); two values equal under the binary collation were equal
under the old one too, so no unique key gains a duplicate, and the CHECK
constraints hold since cyborg only writes their exact spellings. MariaDB
copies each table, blocking its writes until done. There is no downgrade,
like every revision of this project.

Revision ID: 007eb4efa142
Revises: b5e1c7d3a9f2
Create Date: 2026-11-27
"""

from alembic import op
import sqlalchemy as sa

revision = '007eb4efa142'
down_revision = 'b5e1c7d3a9f2'
branch_labels = None
depends_on = None

# Every table at b5e1c7d3a9f2.
TABLES = ('devices', 'deployables', 'attributes', 'controlpath_ids',
          'attach_handles', 'device_profiles', 'extended_accelerator_requests',
          'services', 'host_locks')
# As cyborg.db.models.MYSQL_BINARY_COLLATIONS: the first the server has.
COLLATIONS = ('utf8mb4_nopad_bin', 'utf8mb4_0900_bin')


def _binary_collation(connection):
    available = set(connection.execute(sa.text(
        "SHOW COLLATION WHERE Charset = 'utf8mb4'")).scalars())
    for collation in COLLATIONS:
        if collation in available:
            return collation
    raise RuntimeError('the database server has none of the collations %s'
                       % ', '.join(COLLATIONS))


def upgrade():
    connection = op.get_bind()
    if connection.dialect.name not in ('mysql', 'mariadb'):
        return
    collation = _binary_collation(connection)
    # CONVERT changes the table's default and every string column in one copy.
    for table in TABLES:
        op.execute(sa.text(
            'ALTER TABLE %s CONVERT TO CHARACTER SET utf8mb4 COLLATE %s'
            % (table, collation)))
