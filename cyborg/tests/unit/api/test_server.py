"""The threaded server on a real socket: start on port 0, answer, stop."""

import json
import os
import signal
import socket
import threading
import time
import urllib.error
import urllib.request

from oslo_config import fixture as config_fixture

from cyborg.api import app
from cyborg.api import server
from cyborg import conf as cyborg_conf
from cyborg import policies
from cyborg.tests import base


def hello_app(environ, start_response):
    """A WSGI app that is not cyborg's: the server serves any app."""
    body = ('hello from %s' % environ['PATH_INFO']).encode()
    start_response('200 OK', [('Content-Type', 'text/plain'),
                              ('Content-Length', str(len(body)))])
    return [body]


def get(url, headers=None):
    """(status, headers, body) of a GET through a real socket."""
    # Always an http://127.0.0.1 URL the test built.
    request = urllib.request.Request(url, headers=headers or {})  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def post(url, data):
    """(status, headers, body) of a POST of ``data`` through a real socket."""
    request = urllib.request.Request(url, data=data, method='POST')  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def is_listening(port):
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(('127.0.0.1', port)) == 0


class TestServer(base.TestCase):

    def setUp(self):
        super().setUp()
        self.flags(auth_strategy='noauth')
        policies.reset()
        self.addCleanup(policies.reset)

    def test_serves_the_api_on_a_free_port_and_stops(self):
        api_server = server.Server(app.setup_app(), '127.0.0.1', 0,
                                   threads=4)
        api_server.start()
        self.addCleanup(api_server.stop)
        self.assertNotEqual(0, api_server.port)

        status, headers, body = get('http://127.0.0.1:%d/v2'
                                    % api_server.port)

        self.assertEqual(200, status)
        self.assertEqual('accelerator 2.0', headers['OpenStack-API-Version'])
        document = json.loads(body)
        self.assertEqual('v2.0', document['id'])
        self.assertEqual('http://127.0.0.1:%d/v2/' % api_server.port,
                         document['links'][0]['href'])

        api_server.stop()
        self.assertFalse(is_listening(api_server.port))

    def test_error_bodies_cross_the_socket(self):
        api_server = server.Server(app.setup_app(), '127.0.0.1', 0,
                                   threads=2)
        api_server.start()
        self.addCleanup(api_server.stop)
        status, headers, body = get(
            'http://127.0.0.1:%d/v2' % api_server.port,
            headers={'OpenStack-API-Version': 'accelerator 2.99'})
        self.assertEqual(406, status)
        self.assertEqual('application/json', headers['Content-Type'])
        self.assertIn('minor version is not supported',
                      json.loads(json.loads(body)['error_message'])
                      ['faultstring'])

    def test_serves_any_wsgi_app_with_default_threads(self):
        other_server = server.Server(hello_app, '127.0.0.1', 0,
                                     name='placement')
        self.assertEqual(server.default_threads(), other_server.threads)
        other_server.start()
        self.addCleanup(other_server.stop)
        status, _headers, body = get('http://127.0.0.1:%d/resource_providers'
                                     % other_server.port)
        self.assertEqual((200, b'hello from /resource_providers'),
                         (status, body))

    def test_a_large_answer_arrives_whole_to_a_slow_reader(self):
        # Several megabytes, more than the socket buffers hold: the server
        # sends them in several pieces while the client reads late.
        body = os.urandom(8 * 1024 * 1024)
        pieces = [body[:3], body[3:1000], body[1000:]]
        written = []

        def large_app(environ, start_response):
            start_response('200 OK', [
                ('Content-Type', 'application/octet-stream'),
                ('Content-Length', str(len(body)))])
            written.append(environ)
            return pieces

        large_server = server.Server(large_app, '127.0.0.1', 0, threads=2)
        large_server.start()
        self.addCleanup(large_server.stop)
        with socket.create_connection(('127.0.0.1', large_server.port),
                                      timeout=10) as client:
            client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
            client.sendall(b'GET /large HTTP/1.1\r\nHost: test\r\n\r\n')
            time.sleep(0.3)  # the server's sends fill the buffers and wait
            received = bytearray()
            while b'\r\n\r\n' not in received:
                received += client.recv(65536)
            head, _, answer = bytes(received).partition(b'\r\n\r\n')
            answer = bytearray(answer)
            while len(answer) < len(body):
                piece = client.recv(1024 * 1024)
                self.assertTrue(piece, 'connection closed early')
                answer += piece
        self.assertTrue(head.startswith(b'HTTP/1.1 200 OK'))
        self.assertEqual(len(body), len(answer))
        self.assertTrue(bytes(answer) == body, 'the answer differs')
        self.assertEqual(1, len(written))

    def test_concurrent_requests_use_several_threads(self):
        release = threading.Event()
        inside = []

        def slow_app(environ, start_response):
            inside.append(threading.current_thread().name)
            release.wait(10)
            start_response('200 OK', [('Content-Length', '0')])
            return [b'']

        slow_server = server.Server(slow_app, '127.0.0.1', 0, threads=3)
        slow_server.start()
        self.addCleanup(slow_server.stop)
        url = 'http://127.0.0.1:%d/' % slow_server.port
        results = []
        clients = [threading.Thread(target=lambda: results.append(get(url)))
                   for _ in range(3)]
        for client in clients:
            client.start()
        deadline = time.monotonic() + 10
        while len(inside) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        self.assertEqual(3, len(set(inside)))
        release.set()
        for client in clients:
            client.join(10)
        self.assertEqual([200, 200, 200], [result[0] for result in results])

    def test_a_full_queue_answers_503_with_retry_after(self):
        release = threading.Event()
        inside = []

        def slow_app(environ, start_response):
            inside.append(environ['PATH_INFO'])
            release.wait(10)
            start_response('200 OK', [('Content-Length', '0')])
            return [b'']

        conf = self.useFixture(config_fixture.Config(cyborg_conf.CONF))
        conf.config(group='api', host_ip='127.0.0.1', port=0, api_workers=1,
                    max_queued_requests=1, retry_after=7)
        busy_server = app.api_server(cyborg_conf.CONF, app=slow_app)
        busy_server.start()
        self.addCleanup(busy_server.stop)
        url = 'http://127.0.0.1:%d/' % busy_server.port
        results = {}

        def client(name):
            results[name] = post(url + name, b'x' * 100000)

        # One request in the thread, one in the queue...
        threads = [threading.Thread(target=client, args=(name,))
                   for name in ('first', 'second')]
        threads[0].start()
        deadline = time.monotonic() + 10
        while not inside and time.monotonic() < deadline:
            time.sleep(0.01)
        threads[1].start()
        deadline = time.monotonic() + 10
        while busy_server._server.requests.qsize < 1 and \
                time.monotonic() < deadline:
            time.sleep(0.01)
        # ...and the third, with a body the server reads before answering,
        # gets a 503 it can read, not a reset.
        status, headers, body = post(url + 'third', b'y' * 300000)
        release.set()
        for thread in threads:
            thread.join(10)

        self.assertEqual(503, status)
        self.assertEqual('7', headers['Retry-After'])
        self.assertEqual('application/json', headers['Content-Type'])
        self.assertIn('max_queued_requests',
                      json.loads(json.loads(body)['error_message'])
                      ['faultstring'])
        self.assertEqual({'first': 200, 'second': 200},
                         {name: result[0] for name, result in results.items()})
        self.assertEqual(['/first', '/second'], inside)

    def test_the_api_server_takes_the_api_options(self):
        conf = self.useFixture(config_fixture.Config(cyborg_conf.CONF))
        conf.config(group='api', backlog=300, max_queued_requests=20,
                    retry_after=3, api_workers=5)
        api_server = app.api_server(cyborg_conf.CONF, app=hello_app)
        self.assertEqual((300, 20, 3, 5),
                         (api_server.backlog, api_server.max_queued,
                          api_server.retry_after, api_server.threads))
        defaults = server.Server(hello_app, '127.0.0.1', 0)
        self.assertEqual((4096, 1024), (defaults.backlog, defaults.max_queued))

    def test_serve_forever_returns_after_stop(self):
        api_server = server.Server(hello_app, '127.0.0.1', 0, threads=2)
        serving = threading.Thread(target=api_server.serve_forever)
        serving.start()
        self.addCleanup(api_server.stop)
        deadline = time.monotonic() + 10
        while not api_server.port and time.monotonic() < deadline:
            time.sleep(0.01)
        self.assertEqual(200, get('http://127.0.0.1:%d/' % api_server.port)[0])
        api_server.stop()
        serving.join(10)
        self.assertFalse(serving.is_alive())

    def test_serve_forever_stops_on_sigterm(self):
        if threading.current_thread() is not threading.main_thread():
            self.skipTest('signal handlers need the main thread')
        api_server = server.Server(hello_app, '127.0.0.1', 0, threads=2)
        previous = signal.getsignal(signal.SIGTERM)

        def send_sigterm_when_listening():
            deadline = time.monotonic() + 10
            while not api_server.port and time.monotonic() < deadline:
                time.sleep(0.01)
            os.kill(os.getpid(), signal.SIGTERM)

        sender = threading.Thread(target=send_sigterm_when_listening)
        sender.start()
        started = time.monotonic()
        api_server.serve_forever()
        sender.join(10)
        self.assertLess(time.monotonic() - started, 10)
        self.assertFalse(is_listening(api_server.port))
        # The handler of before serve_forever is back.
        self.assertIs(previous, signal.getsignal(signal.SIGTERM))
