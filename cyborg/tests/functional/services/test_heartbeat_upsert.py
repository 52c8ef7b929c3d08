"""The heartbeat upsert on MariaDB and PostgreSQL, with racing writers."""

import threading

from cyborg import context as cyborg_context
from cyborg import objects
from cyborg.tests import base
from cyborg.tests.fixtures import database

WRITERS = 4
BEATS_EACH = 10


class HeartbeatUpsertMixin:

    backend = None

    def setUp(self):
        super().setUp()
        self.useFixture(database.Database(backend=self.backend,
                                          schema='migrations'))
        self.context = cyborg_context.get_admin_context()

    def test_counts_up_on_one_row(self):
        for _ in range(3):
            service = objects.Service.record_heartbeat(
                self.context, 'node-1', 'cyborg-agent', 'cyborg-agent')

        self.assertEqual(3, service.report_count)
        self.assertEqual(1, len(objects.Service.list(self.context)))

    def test_racing_writers_of_a_new_row_lose_no_count(self):
        errors = []
        start = threading.Barrier(WRITERS)

        def beat():
            context = cyborg_context.get_admin_context()
            try:
                start.wait()
                for _ in range(BEATS_EACH):
                    objects.Service.record_heartbeat(
                        context, 'node-1', 'cyborg-agent', 'cyborg-agent')
            except Exception as error:
                errors.append(error)

        threads = [threading.Thread(target=beat) for _ in range(WRITERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        self.assertEqual([], errors)
        service = objects.Service.get_by_host_and_binary(
            self.context, 'node-1', 'cyborg-agent')
        self.assertEqual(WRITERS * BEATS_EACH, service.report_count)


class TestHeartbeatUpsertMySQL(HeartbeatUpsertMixin, base.TestCase):
    backend = 'mysql'


class TestHeartbeatUpsertPostgreSQL(HeartbeatUpsertMixin, base.TestCase):
    backend = 'postgresql'
