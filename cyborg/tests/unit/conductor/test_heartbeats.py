"""Heartbeat upsert and the Service object, on SQLite."""

import datetime
import threading

from oslo_utils import timeutils

from cyborg import context as cyborg_context
from cyborg import exception
from cyborg import objects
from cyborg.conductor import heartbeats
from cyborg.tests import base
from cyborg.tests.fixtures import database


class TestRecordHeartbeat(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(database.Database(backend='sqlite'))
        self.context = cyborg_context.get_admin_context()

    def test_first_heartbeat_creates_the_row(self):
        service = heartbeats.record(self.context, 'node-1', 'cyborg-agent',
                                    'cyborg-agent')

        self.assertIsInstance(service, objects.Service)
        self.assertEqual(('node-1', 'cyborg-agent', 'cyborg-agent', 1),
                         (service.host, service.binary, service.topic,
                          service.report_count))
        self.assertIsNotNone(service.last_seen_up)

    def test_each_heartbeat_counts_up_and_moves_last_seen_up(self):
        first = heartbeats.record(self.context, 'node-1', 'cyborg-agent',
                                  'cyborg-agent')
        second = heartbeats.record(self.context, 'node-1', 'cyborg-agent',
                                   'cyborg-agent')
        third = heartbeats.record(self.context, 'node-1', 'cyborg-agent',
                                  'cyborg-agent')

        self.assertEqual([1, 2, 3], [first.report_count,
                                     second.report_count,
                                     third.report_count])
        self.assertEqual(first.id, third.id)
        self.assertGreaterEqual(third.last_seen_up, first.last_seen_up)
        self.assertIsNotNone(third.updated_at)

    def test_host_and_binary_make_separate_rows(self):
        heartbeats.record(self.context, 'node-1', 'cyborg-agent',
                          'cyborg-agent')
        heartbeats.record(self.context, 'node-1', 'cyborg-conductor',
                          'cyborg-conductor')
        heartbeats.record(self.context, 'node-2', 'cyborg-agent',
                          'cyborg-agent')
        heartbeats.record(self.context, 'node-2', 'cyborg-agent',
                          'cyborg-agent')

        services = objects.Service.list(self.context)

        self.assertEqual(
            [('cyborg-agent', 'node-1', 1), ('cyborg-agent', 'node-2', 2),
             ('cyborg-conductor', 'node-1', 1)],
            [(s.binary, s.host, s.report_count) for s in services])

    def test_concurrent_heartbeats_lose_no_count(self):
        errors = []

        def beat():
            context = cyborg_context.get_admin_context()
            try:
                for _ in range(5):
                    heartbeats.record(context, 'node-1', 'cyborg-agent',
                                      'cyborg-agent')
            except Exception as error:
                errors.append(error)

        threads = [threading.Thread(target=beat) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        self.assertEqual([], errors)
        service = objects.Service.get_by_host_and_binary(
            self.context, 'node-1', 'cyborg-agent')
        self.assertEqual(20, service.report_count)

    def test_unknown_service_is_not_found(self):
        self.assertRaises(exception.ResourceNotFound,
                          objects.Service.get_by_host_and_binary,
                          self.context, 'node-1', 'cyborg-agent')


class TestServiceIsUp(base.TestCase):

    def _service(self, seconds_ago):
        service = objects.Service(host='node-1', binary='cyborg-agent')
        if seconds_ago is None:
            service.last_seen_up = None
        else:
            service.last_seen_up = (timeutils.utcnow() -
                                    datetime.timedelta(seconds=seconds_ago))
        return service

    def test_recent_heartbeat_is_up(self):
        self.assertTrue(self._service(seconds_ago=59).is_up(60))

    def test_old_heartbeat_is_down(self):
        self.assertFalse(self._service(seconds_ago=61).is_up(60))

    def test_down_time_is_the_one_handed_in(self):
        self.assertFalse(self._service(seconds_ago=11).is_up(10))
        self.assertTrue(self._service(seconds_ago=11).is_up(60))

    def test_never_seen_is_down(self):
        self.assertFalse(self._service(seconds_ago=None).is_up(60))
