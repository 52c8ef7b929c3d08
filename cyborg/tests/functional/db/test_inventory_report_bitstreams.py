"""A report's bitstream_id reconciliation on MariaDB and PostgreSQL.

The cases live in
``cyborg.tests.unit.conductor.test_inventory_report_bitstreams``; here they
run on the servers production uses.
"""

from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.unit.conductor import (
    test_inventory_report_bitstreams as cases)


class TestBitstreamsOnMariaDB(cases.BitstreamTests, base.TestCase):

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(database.Database(backend='mysql'))


class TestBitstreamsOnPostgreSQL(cases.BitstreamTests, base.TestCase):

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(
            database.Database(backend='postgresql'))
