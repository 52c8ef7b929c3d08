"""RPCService: serves its manager, beats every report_interval, stops cleanly."""

import threading
import time

import oslo_messaging

from cyborg import conf
from cyborg import context as cyborg_context
from cyborg import rpc
from cyborg import service
from cyborg.tests import base
from cyborg.tests.fixtures import messaging

TOPIC = 'cyborg-test-service'


class Manager:
    target = oslo_messaging.Target(version='1.0')

    @oslo_messaging.expose
    def ping(self, context):
        return 'pong'


class Heartbeats:
    """Records the time of each heartbeat; may fail on request."""

    def __init__(self, failures=0):
        self.times = []
        self.failures = failures
        self.lock = threading.Lock()

    def __call__(self, context):
        with self.lock:
            self.times.append(time.monotonic())
            if self.failures:
                self.failures -= 1
                raise oslo_messaging.MessagingTimeout('conductor away')

    def count(self):
        with self.lock:
            return len(self.times)


def wait_for(predicate, timeout=5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


class TestRPCService(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(messaging.Messaging(conf.CONF))
        self.flags(report_interval=1)
        self.context = cyborg_context.get_admin_context()

    def _start(self, heartbeat):
        rpc_service = service.RPCService(Manager(), TOPIC, 'host-1',
                                         heartbeat)
        rpc_service.start()
        self.addCleanup(rpc_service.stop)
        return rpc_service

    def _client(self):
        return rpc.get_client(oslo_messaging.Target(topic=TOPIC,
                                                    server='host-1'))

    def test_start_serves_the_manager_on_topic_and_host(self):
        self._start(Heartbeats())

        self.assertEqual('pong', self._client().call(self.context, 'ping'))

    def test_heartbeat_runs_at_start_and_every_report_interval(self):
        heartbeats = Heartbeats()
        self._start(heartbeats)

        self.assertTrue(wait_for(lambda: heartbeats.count() >= 3, timeout=4))
        gaps = [later - earlier for earlier, later
                in zip(heartbeats.times, heartbeats.times[1:], strict=False)]
        for gap in gaps[:2]:
            self.assertGreater(gap, 0.8)
            self.assertLess(gap, 1.5)

    def test_failing_heartbeat_is_retried_at_the_next_interval(self):
        heartbeats = Heartbeats(failures=1)
        self._start(heartbeats)

        self.assertTrue(wait_for(lambda: heartbeats.count() >= 2, timeout=3))

    def test_stop_ends_heartbeats_and_the_server(self):
        heartbeats = Heartbeats()
        rpc_service = self._start(heartbeats)
        self.assertTrue(wait_for(lambda: heartbeats.count() >= 1))
        waiter = threading.Thread(target=rpc_service.wait)
        waiter.start()

        rpc_service.stop()

        waiter.join(5)
        self.assertFalse(waiter.is_alive())
        count = heartbeats.count()
        time.sleep(1.2)
        self.assertEqual(count, heartbeats.count())
        self.flags(rpc_response_timeout=1)
        self.assertRaises(oslo_messaging.MessagingTimeout,
                          self._client().call, self.context, 'ping')

    def test_reset_keeps_serving_and_beating(self):
        heartbeats = Heartbeats()
        rpc_service = self._start(heartbeats)
        self.assertTrue(wait_for(lambda: heartbeats.count() >= 1))

        rpc_service.reset()

        self.assertTrue(wait_for(lambda: heartbeats.count() >= 2, timeout=3))
        self.assertEqual('pong', self._client().call(self.context, 'ping'))
