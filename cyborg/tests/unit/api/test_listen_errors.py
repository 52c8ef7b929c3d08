"""A port that is taken: one message naming the service, the address and
the option that moves it (cyborg.common.listening.ListenError), from the API's
servers and the metrics exporters; and the fleet page's own port, which
answers the page's paths only."""

import socket

import prometheus_client
import webob

from cyborg.api.fleet import port as fleet_port
from cyborg.api import server
from cyborg.common import listening
from cyborg import metrics
from cyborg.tests import base


def hello(environ, start_response):
    start_response('200 OK', [('Content-Type', 'text/plain')])
    return [environ['PATH_INFO'].encode()]


class TakenPortTests(base.TestCase):

    def setUp(self):
        super().setUp()
        self.occupant = socket.socket()
        self.addCleanup(self.occupant.close)
        self.occupant.bind(('127.0.0.1', 0))
        self.occupant.listen()
        self.port = self.occupant.getsockname()[1]

    def test_server_names_the_option(self):
        taken = server.Server(hello, '127.0.0.1', self.port, threads=1,
                              name='cyborg-api', option='[api] port')
        error = self.assertRaises(listening.ListenError, taken.start)
        self.assertEqual(
            'cyborg-api cannot listen on 127.0.0.1:%d: the port is already '
            'in use; set [api] port to another port' % self.port, str(error))
        self.assertIsInstance(error, OSError)
        # Nothing is left started: a stop does nothing, a start on a free
        # port works.
        taken.stop()
        taken.port = 0
        taken.start()
        self.addCleanup(taken.stop)
        self.assertNotEqual(self.port, taken.port)

    def test_server_without_an_option(self):
        taken = server.Server(hello, '127.0.0.1', self.port, threads=1,
                              name='placement')
        self.assertEqual(
            'placement cannot listen on 127.0.0.1:%d: the port is already '
            'in use' % self.port,
            str(self.assertRaises(listening.ListenError, taken.start)))

    def test_an_address_this_host_lacks(self):
        taken = server.Server(hello, '192.0.2.1', 0, threads=1,
                              name='cyborg-api', option='[api] host_ip')
        message = str(self.assertRaises(listening.ListenError, taken.start))
        self.assertIn('cannot listen on 192.0.2.1:0: ', message)
        self.assertIn('ssign', message)  # Cannot assign requested address

    def test_exporter_names_the_option(self):
        metrics.disable()
        self.addCleanup(metrics.disable)
        exporter = metrics.Exporter(
            '127.0.0.1', self.port, prometheus_client.CollectorRegistry(),
            'cyborg-agent', '[metrics] agent_port')
        self.assertEqual(
            "cyborg-agent's metrics cannot listen on 127.0.0.1:%d: the port "
            "is already in use; set [metrics] agent_port to another port"
            % self.port,
            str(self.assertRaises(listening.ListenError, exporter.start)))
        # A process whose exporter failed does not measure.
        self.assertFalse(metrics.is_enabled())


class PageOnlyTests(base.TestCase):

    def setUp(self):
        super().setUp()
        self.application = fleet_port.PageOnly(hello, 6666)

    def _get(self, path):
        return webob.Request.blank(path).get_response(self.application)

    def test_the_page_paths_pass(self):
        for path, seen in (('/v2/fleet', '/v2/fleet'), ('/fleet', '/fleet'),
                           ('/v2/fleet/', '/v2/fleet'),
                           ('/fleet/', '/fleet')):
            response = self._get(path)
            self.assertEqual(200, response.status_int, path)
            self.assertEqual(seen, response.text)

    def test_root_redirects_to_the_page(self):
        response = self._get('/?refresh=2')
        self.assertEqual(302, response.status_int)
        self.assertEqual('/v2/fleet?refresh=2', response.location.split(
            'localhost', 1)[-1])

    def test_the_api_is_not_served(self):
        for path in ('/v2', '/v2/devices', '/metrics', '/healthcheck',
                     '/v2/fleetx', '/v2/fleet/x'):
            response = self._get(path)
            self.assertEqual(404, response.status_int, path)
            self.assertIn('the API is on port 6666', response.text)
