"""Programming binds and releases on MariaDB and PostgreSQL.

The cases of ``cyborg.tests.unit.conductor.test_bind_programming`` and
``test_release`` again on the servers production uses, where the row
locks of ``claim`` (``being_programmed``) and of a program request's lock
do the work SQLite's single writer does, and where the statements that
record reasons and bitstreams (CASE expressions) must be accepted.
"""

from cyborg.tests import base
from cyborg.tests.unit.conductor import test_bind_programming as cases
from cyborg.tests.unit.conductor import test_release as release_cases


class MariaDBBitstreamIdTests(cases.BitstreamIdTests, base.TestCase):
    backend = 'mysql'


class PostgreSQLBitstreamIdTests(cases.BitstreamIdTests, base.TestCase):
    backend = 'postgresql'


class MariaDBProgramRequestRaceTests(cases.ProgramRequestRaceTests,
                                     base.TestCase):
    backend = 'mysql'


class PostgreSQLProgramRequestRaceTests(cases.ProgramRequestRaceTests,
                                        base.TestCase):
    backend = 'postgresql'


class MariaDBReleaseTests(release_cases.ReleaseTests, base.TestCase):
    backend = 'mysql'


class PostgreSQLReleaseTests(release_cases.ReleaseTests, base.TestCase):
    backend = 'postgresql'
