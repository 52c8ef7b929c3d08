"""The metrics server's life with its RPC service, and the multiprocess
mode (PROMETHEUS_MULTIPROC_DIR) of several worker processes."""

import os
import subprocess
import sys
import textwrap

import fixtures
import oslo_messaging
import requests

from cyborg import conf
from cyborg import context as cyborg_context
from cyborg import metrics
from cyborg import rpc
from cyborg import service
from cyborg.agent import metrics as agent_metrics
from cyborg.tests import base
from cyborg.tests.fixtures import messaging
from cyborg.tests.unit import test_service
from cyborg.tests.unit.metrics import scraping


class BrokenManager(test_service.Manager):

    @oslo_messaging.expose
    def broken(self, context):
        raise ValueError('broken on purpose')


class TestExporterWithRPCService(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(messaging.Messaging(conf.CONF))
        self.addCleanup(metrics.disable)

    def test_served_from_start_to_stop_through_the_counting_endpoint(self):
        exporter = agent_metrics.exporter('127.0.0.1', 0)
        rpc_service = service.RPCService(
            agent_metrics.counting_endpoints(BrokenManager()),
            test_service.TOPIC, 'host-1',
            heartbeat=test_service.Heartbeats(), exporter=exporter)
        client = rpc.get_client(oslo_messaging.Target(
            topic=test_service.TOPIC, server='host-1', version='1.0'))
        context = cyborg_context.get_admin_context()
        labels = dict(method='broken', error='ValueError')

        rpc_service.start()
        try:
            self.assertTrue(metrics.is_enabled())
            before = scraping.scrape(exporter.port)
            self.assertEqual('pong', client.call(context, 'ping'))
            self.assertRaises(ValueError, client.call,
                              context, 'broken')
            after = scraping.scrape(exporter.port)
        finally:
            rpc_service.stop()

        self.assertEqual(1, after.value('cyborg_agent_rpc_errors_total',
                                        **labels)
                         - before.value('cyborg_agent_rpc_errors_total',
                                        **labels))
        self.assertNotEqual(0, after.value('process_start_time_seconds'))

        self.assertRaises(requests.ConnectionError, scraping.scrape,
                          exporter.port)

    def test_several_workers_need_the_multiprocess_mode(self):
        self.useFixture(fixtures.EnvironmentVariable(
            metrics.MULTIPROCESS_DIR_ENV))
        exporter = agent_metrics.exporter('127.0.0.1', 0)
        rpc_service = service.RPCService(
            test_service.Manager(), test_service.TOPIC, 'host-1',
            heartbeat=test_service.Heartbeats())

        self.assertEqual(1, service.run(rpc_service, 'cyborg-test',
                                        workers=2, exporter=exporter))
        self.assertIsNone(rpc_service.exporter)


# Two worker processes answer a request each; the parent's /metrics adds
# them up, as several uwsgi workers of cyborg-api sharing one directory.
WORKERS_SCRIPT = textwrap.dedent('''
    import os
    import webob
    from cyborg.api import metrics as api_metrics

    def application(environ, start_response):
        start_response('200 OK', [('Content-Type', 'text/plain')])
        return [b'ok']

    middleware = api_metrics.Metrics(application)
    for _ in range(2):
        pid = os.fork()
        if pid == 0:
            webob.Request.blank('/v2/devices').get_response(middleware)
            os._exit(0)
        os.waitpid(pid, 0)
    print(webob.Request.blank('/metrics').get_response(middleware).text)
''')


class TestMultiprocessMode(base.TestCase):

    def test_api_workers_are_added_up(self):
        directory = self.useFixture(fixtures.TempDir()).path
        environment = dict(os.environ, **{
            metrics.MULTIPROCESS_DIR_ENV: directory})

        output = subprocess.run(
            [sys.executable, '-c', WORKERS_SCRIPT], env=environment,
            check=True, capture_output=True, text=True, timeout=120).stdout

        scrape = scraping.parse(output)
        self.assertEqual(2, scrape.value(
            'cyborg_api_request_duration_seconds_count', method='GET',
            route='/v2/devices', status='200'))
        self.assertEqual(0, scrape.value('cyborg_api_requests_in_flight'))
