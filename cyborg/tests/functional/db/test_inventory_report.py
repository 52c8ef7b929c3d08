"""inventory_report.apply on MariaDB and PostgreSQL: the SQLite cases again.

The cases live in ``cyborg.tests.unit.conductor.test_inventory_report``;
here they run on the servers production uses, where INSERT ... RETURNING
batches, executemany UPDATEs and the deployable tree's self-referencing
cascades need their own proof.
"""

from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.unit.conductor import test_inventory_report as cases


class TestReconciliationOnMariaDB(cases.ReconciliationTests, base.TestCase):

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(database.Database(backend='mysql'))


class TestReconciliationOnPostgreSQL(cases.ReconciliationTests,
                                     base.TestCase):

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(
            database.Database(backend='postgresql'))


class TestStatementCountsOnMariaDB(cases.StatementCountTests, base.TestCase):

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(database.Database(backend='mysql'))


class TestStatementCountsOnPostgreSQL(cases.StatementCountTests,
                                      base.TestCase):

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(
            database.Database(backend='postgresql'))
