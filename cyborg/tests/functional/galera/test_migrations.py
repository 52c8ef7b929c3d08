"""The migrations on a node of a Galera cluster: they build exactly the models.

Galera replicates DDL in total order and only InnoDB tables; every table
needs a primary key for its rows to replicate. The schema is built on node
0 and compared with the models on node 2, where it arrived by replication.
"""

import sqlalchemy as sa

from cyborg.db import migration
from cyborg.db import models
from cyborg.tests import base
from cyborg.tests.functional.db import test_migrations as cases
from cyborg.tests.functional.galera import base as galera_base


class GaleraMigrationsTest(galera_base.GaleraMixin,
                           cases.MigrationsTestMixin,
                           cases.ModelsMigrationsSyncMixin, base.TestCase):

    def test_replicated_schema_is_whole(self):
        migration.upgrade('head', engine=self.database.engine)

        # wsrep_sync_wait: each read of every connection waits until node 2
        # applied what the cluster committed before it.
        other = sa.create_engine(
            self.on_node(self.database.url, 2), poolclass=sa.pool.NullPool,
            connect_args={'init_command': 'SET SESSION wsrep_sync_wait = 1'})
        self.addCleanup(other.dispose)
        with other.connect() as connection:
            self.assertEqual(migration.head_revision(),
                             migration.current_revision(other))
            inspector = sa.inspect(connection)
            tables = set(inspector.get_table_names())
            self.assertEqual(
                set(models.Base.metadata.tables) | {'alembic_version'},
                tables)
            engines = dict(connection.execute(sa.text(
                'SELECT table_name, engine FROM information_schema.tables '
                'WHERE table_schema = DATABASE()')).all())
            without_key = [
                table for table in tables
                if not inspector.get_pk_constraint(table)[
                    'constrained_columns']]
        self.assertEqual({'InnoDB'}, set(engines.values()), engines)
        self.assertEqual([], sorted(without_key))
