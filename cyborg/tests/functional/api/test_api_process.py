"""cyborg-api as a real process, and the WSGI entry point in a fresh interpreter."""

from concurrent import futures
import http.client
import json
import os
import subprocess
import sys
import textwrap
import threading
import time

import fixtures

from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.fixtures import processes

START_TIMEOUT = 30


def get(port, path, timeout=5):
    """(status, headers, body) of one GET to 127.0.0.1:port."""
    connection = http.client.HTTPConnection('127.0.0.1', port,
                                            timeout=timeout)
    try:
        connection.request('GET', path)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


class TestCyborgApiProcess(base.TestCase):
    """cyborg-api serves on its configured port and stops on SIGTERM."""

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(database.Database(
            backend='sqlite', schema='migrations'))
        self.port = processes.free_port()
        self.api = self.useFixture(processes.ServiceProcess('cyborg-api', {
            'DEFAULT': {'auth_strategy': 'noauth', 'debug': True},
            'api': {'host_ip': '127.0.0.1', 'port': self.port,
                    'api_workers': 4},
            'database': {'connection': self.database.url},
        }))

    def _wait_until_listening(self):
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if not self.api.is_running():
                self.fail('cyborg-api exited with %s'
                          % self.api.process.returncode)
            try:
                return get(self.port, '/v2')
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def test_answers_and_stops_cleanly_on_sigterm(self):
        status, headers, body = self._wait_until_listening()
        self.assertEqual(200, status)
        self.assertEqual('accelerator 2.0', headers['OpenStack-API-Version'])
        self.assertEqual('http://127.0.0.1:%d/v2/' % self.port,
                         json.loads(body)['links'][0]['href'])

        status, _headers, body = get(self.port, '/v2/nothing-here')
        self.assertEqual(404, status)
        self.assertIn('error_message', json.loads(body))

        exit_code, seconds = self.api.stop(timeout=10)
        self.assertEqual(0, exit_code)
        self.assertLess(seconds, 5)
        log = self.api.log()
        self.assertIn('cyborg-api listening on 127.0.0.1:%d with 4 threads'
                      % self.port, log)
        self.assertIn('SIGTERM received', log)
        self.assertIn('cyborg-api stopped', log)
        self.assertNotIn('Traceback', log)


class TestWSGIEntryPoint(base.TestCase):
    """cyborg.wsgi.api.init_application reads OS_CYBORG_CONFIG_FILES."""

    def test_init_application_reads_the_listed_config_files(self):
        directory = self.useFixture(fixtures.TempDir()).path
        first = os.path.join(directory, 'cyborg.conf')
        second = os.path.join(directory, 'api.conf')
        processes.write_config(first, {'DEFAULT': {'auth_strategy': 'noauth'}})
        processes.write_config(second, {'api': {
            'public_endpoint': 'https://cyborg.example.org/accelerator'}})
        # A fresh interpreter: init_application configures process globals.
        script = textwrap.dedent('''
            import json
            import webob
            from cyborg.wsgi import api
            application = api.init_application()
            response = webob.Request.blank('/v2/nothing-here').get_response(
                application)
            root = webob.Request.blank('/').get_response(application)
            print(json.dumps({
                'status': response.status_int,
                'href': root.json_body['versions'][0]['links'][0]['href']}))
        ''')
        environ = dict(os.environ, OS_CYBORG_CONFIG_FILES='%s;%s'
                       % (first, second))
        result = subprocess.run([sys.executable, '-c', script], env=environ,
                                capture_output=True, text=True, timeout=60,
                                cwd=directory)
        self.assertEqual(0, result.returncode, result.stderr)
        outcome = json.loads(result.stdout.strip().splitlines()[-1])
        # noauth from the first file: no 401 but Pecan's 404.
        self.assertEqual(404, outcome['status'])
        # public_endpoint from the second file.
        self.assertEqual('https://cyborg.example.org/accelerator/v2',
                         outcome['href'])


class TestApiBurst(base.TestCase):
    """200 clients at once: every one is answered, none is reset.

    The burst Nova's computes or a fleet of callers make: with cheroot's
    default listen backlog of 5, a quarter of them waited more than three
    seconds for their connection. With [api] backlog and
    max_queued_requests at their defaults, 4 request threads serve all 200
    connections (opened together, three requests each) in turn.
    """

    CLIENTS = 200
    CONNECT_TIMEOUT = 3
    REQUESTS = ('/v2', '/v2/device_profiles', '/v2/deployables')

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(database.Database(
            backend='mysql', schema='migrations'))
        self.port = processes.free_port()
        self.api = self.useFixture(processes.ServiceProcess('cyborg-api', {
            'DEFAULT': {'auth_strategy': 'noauth'},
            'api': {'host_ip': '127.0.0.1', 'port': self.port,
                    'api_workers': 4},
            'database': {'connection': self.database.url,
                         'max_pool_size': 4},
        }))

    def _client(self, barrier):
        """Open a connection with the others, then send the requests.

        The connection must be accepted within CONNECT_TIMEOUT: a SYN the
        listening socket has no room for is sent again only after a second,
        then three, so a burst beyond the backlog fails here.
        """
        barrier.wait(30)
        connection = http.client.HTTPConnection('127.0.0.1', self.port,
                                                timeout=self.CONNECT_TIMEOUT)
        statuses = []
        try:
            connection.connect()
            connection.sock.settimeout(60)
            for path in self.REQUESTS:
                connection.request('GET', path)
                response = connection.getresponse()
                response.read()
                statuses.append(response.status)
        except OSError as error:
            statuses.append('%s: %s' % (type(error).__name__, error))
        finally:
            connection.close()
        return statuses

    def test_200_concurrent_clients_are_all_answered(self):
        TestCyborgApiProcess._wait_until_listening(self)
        barrier = threading.Barrier(self.CLIENTS)
        with futures.ThreadPoolExecutor(self.CLIENTS) as pool:
            answers = list(pool.map(lambda _: self._client(barrier),
                                    range(self.CLIENTS)))
        failed = [answer for answer in answers if answer != [200] * 3]
        self.assertEqual([], failed[:5], '%d of %d clients failed'
                         % (len(failed), self.CLIENTS))
        self.assertNotIn('Traceback', self.api.log())
