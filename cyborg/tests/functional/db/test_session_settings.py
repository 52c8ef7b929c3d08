"""The session settings cyborg.db.api gives every server connection hold
from the first connection of a service's engine.

oslo.db opens a test connection as it makes an engine, before cyborg's
engine hooks run, and keeps it in the pool: a hook that only listened for
new connections left that one without its setting.
"""

import sqlalchemy as sa
from oslo_db.sqlalchemy import engines

from cyborg.db import api as db_api
from cyborg.tests import base
from cyborg.tests.fixtures import database


class SessionSettingsTestMixin:

    backend = None
    hook = None
    setting = None
    expected = None

    def prepare(self, url):
        """Change the database's own default of the setting, if it can."""

    def test_the_first_connection_has_the_setting(self):
        url = self.useFixture(database.Database(self.backend,
                                                schema=None)).url
        self.prepare(url)
        # As oslo.db's enginefacade makes a service's engine: its test
        # connection first, then the hooks.
        engine = engines.create_engine(url, max_retries=1)
        self.addCleanup(engine.dispose)
        self.hook(engine)
        with engine.connect() as connection:
            self.assertEqual(self.expected, str(connection.exec_driver_sql(
                self.setting).scalar()))


class MySQLSessionSettingsTest(SessionSettingsTestMixin, base.TestCase):
    backend = 'mysql'
    hook = staticmethod(db_api._long_group_concat)
    setting = 'SELECT @@SESSION.group_concat_max_len'
    expected = '1073741824'


class PostgreSQLSessionSettingsTest(SessionSettingsTestMixin, base.TestCase):
    backend = 'postgresql'
    hook = staticmethod(db_api._iso_datestyle)
    setting = 'SHOW DateStyle'
    expected = 'ISO, MDY'

    def prepare(self, url):
        engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
        try:
            with engine.connect() as connection:
                connection.exec_driver_sql(
                    "ALTER DATABASE %s SET DateStyle = 'SQL, DMY'"
                    % engine.url.database)
                connection.commit()
        finally:
            engine.dispose()
