"""The engine options handed to oslo.db from [database]."""

import sqlalchemy as sa
from oslo_db.sqlalchemy import engines

from cyborg import conf
from cyborg.db import api as db_api
from cyborg.tests import base


class TestEngineOptions(base.TestCase):

    def test_no_eventlet_yield_at_check_in(self):
        options = db_api._engine_options(conf.CONF)
        self.assertIs(False, options['thread_checkin'])
        engine = engines.create_engine(
            'sqlite://', thread_checkin=options['thread_checkin'],
            max_retries=0)
        self.addCleanup(engine.dispose)
        self.assertFalse(sa.event.contains(engine, 'checkin',
                                           engines._thread_yield))
        # oslo.db's default would add it.
        default = engines.create_engine('sqlite://', max_retries=0)
        self.addCleanup(default.dispose)
        self.assertTrue(sa.event.contains(default, 'checkin',
                                          engines._thread_yield))
