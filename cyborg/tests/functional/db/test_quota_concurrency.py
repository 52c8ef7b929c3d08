"""Quota checks racing on MariaDB and PostgreSQL (and SQLite).

Threads create ARQs (or device profiles) at once, more than the limit
allows. Each create checks in its own transaction, which on the servers
does not see the others' uncommitted rows; the re-check after the commit
(``cyborg.conductor.quota``) must leave at most the limit: every create
that answered succeeded holds its rows, every other one got a 403 and
left nothing. Then the creates that the limit still allows succeed, one
by one, and the next one is refused: nothing was left behind.
"""

import threading

from cyborg import exception
from cyborg import objects
from cyborg.conductor import arqs
from cyborg.conductor import device_profiles
from cyborg.tests.unit.conductor import test_quota
from cyborg.tests.unit.conductor import projects
from cyborg.tests.unit.db import records

PROJECT = 'project-race'
THREADS = 8
LIMIT = 3


def race(create):
    """Run ``create`` in THREADS threads at once; (successes, errors)."""
    start = threading.Barrier(THREADS)
    results = []
    lock = threading.Lock()

    def run():
        start.wait()
        try:
            outcome = create()
        except Exception as error:
            outcome = error
        with lock:
            results.append(outcome)

    threads = [threading.Thread(target=run) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    errors = [result for result in results if isinstance(result, Exception)]
    successes = [result for result in results
                 if not isinstance(result, Exception)]
    return successes, errors


class QuotaRaceTests:

    project = PROJECT

    def _assert_refused(self, errors):
        for error in errors:
            self.assertIsInstance(error, exception.QuotaExceeded)

    def test_arq_creates_never_pass_the_limit_together(self):
        records.make_device_profile(self.admin, name='fpga',
                                    groups=[{'resources:FPGA': '1'}])
        quotas = test_quota.local_quotas(class_FPGA=LIMIT)

        def create():
            return arqs.create(self.member, 'fpga', quotas=quotas)

        created, errors = race(create)

        self._assert_refused(errors)
        self.assertLessEqual(len(created), LIMIT)
        stored = {arq.uuid for arq in objects.ARQ.list(self.admin)}
        self.assertEqual({arq.uuid for batch in created for arq in batch},
                         stored)
        for _ in range(LIMIT - len(created)):
            create()
        self.assertRaises(exception.QuotaExceeded, create)
        self.assertEqual(LIMIT, len(objects.ARQ.list(self.admin)))

    def test_device_profile_creates_never_pass_the_limit_together(self):
        quotas = test_quota.local_quotas(device_profiles=LIMIT)
        names = iter(range(1000))
        names_lock = threading.Lock()

        def create():
            with names_lock:
                name = 'profile-%d' % next(names)
            return device_profiles.create(
                self.admin, [{'name': name,
                              'groups': [{'resources:FPGA': '1'}]}],
                quotas=quotas)

        created, errors = race(create)

        self._assert_refused(errors)
        self.assertLessEqual(len(created), LIMIT)
        stored = {profile.name
                  for profile in objects.DeviceProfile.list(self.admin)}
        self.assertEqual({profile.name for batch in created
                          for profile in batch}, stored)
        for _ in range(LIMIT - len(created)):
            create()
        self.assertRaises(exception.QuotaExceeded, create)


class SQLiteQuotaRaceTests(QuotaRaceTests, projects.ProjectsTestCase):
    pass


class MariaDBQuotaRaceTests(QuotaRaceTests, projects.ProjectsTestCase):
    backend = 'mysql'


class PostgreSQLQuotaRaceTests(QuotaRaceTests, projects.ProjectsTestCase):
    backend = 'postgresql'
