"""The health policy on MariaDB and PostgreSQL: the SQLite cases again.

The cases live in ``cyborg.tests.unit.conductor.test_health``; here the
bulk counts of healthy reports, the health writer's compare-and-set and
the history entries run on the servers production uses.
"""

from cyborg.tests.unit.conductor import test_health as cases


class TestReportsOnMariaDB(cases.ReportTests):
    backend = 'mysql'


class TestReportsOnPostgreSQL(cases.ReportTests):
    backend = 'postgresql'


class TestClearOnMariaDB(cases.ClearTests):
    backend = 'mysql'


class TestClearOnPostgreSQL(cases.ClearTests):
    backend = 'postgresql'


class TestStatementsOnMariaDB(cases.StatementTests):
    backend = 'mysql'


class TestStatementsOnPostgreSQL(cases.StatementTests):
    backend = 'postgresql'
